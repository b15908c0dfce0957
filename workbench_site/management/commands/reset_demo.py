"""reset_demo (`make reset`): this checkout starts again from scratch. Removes what `make
run` made for it, after saying what: its SQLite database, the demo's credentials and files,
its shared store directory and its uid claim. Keeps `.env` (its secrets and settings) and
`.venv`. Only the checkout's own: a database or store elsewhere (a server, a file outside
the checkout) is left as it is, and so is a claim another installation made. Refused while
a gateway of the checkout runs (it holds its uid claim)."""

import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from mcp_gateway import StartRefused, read_uid_claim, retire_uid_claim, uid_claim_held
from toolboxes.installation import database_file, describe_database
from workbench_site.management import checkout
from workbench_site.management.commands.setup_demo import CREDENTIALS_FILE

SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
UID_CLAIM = "the uid claim"


def inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


class Command(BaseCommand):
    help = "Remove this checkout's database, demo files and uid claim: make run starts anew."
    requires_system_checks: list[str] = []  # the database is about to go

    def handle(self, *args: Any, **options: Any) -> None:
        claims = Path(settings.WORKBENCH_SANDBOX_UID_CLAIMS_DIR)
        base = settings.WORKBENCH_SANDBOX_UID_BASE
        if uid_claim_held(claims, base):
            raise CommandError(
                f"A gateway of this checkout is running (it holds its uid claim, "
                f"{claims / f'{base}.json'}): stop it (Ctrl-C where make run runs), then reset."
            )
        removed, kept = self._plan(Path(settings.BASE_DIR), claims, base)
        if removed:
            self.stdout.write("Starting this checkout again from scratch. Removing:")
            self.stdout.write("".join(f"  {what}: {path}\n" for what, path in removed), ending="")
        else:
            self.stdout.write("Nothing to remove: this checkout has no database or demo yet.")
        kept.append(".env (this checkout's secrets and settings) and .venv")
        self.stdout.write("Kept:\n" + "".join(f"  {line}\n" for line in kept), ending="")
        for what, path in removed:
            if what == UID_CLAIM:
                try:
                    retire_uid_claim(claims, base)
                except StartRefused as exc:  # a gateway started meanwhile
                    raise CommandError(str(exc)) from exc
            elif path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        if removed:
            self.stdout.write("Done: make run starts this checkout again from scratch.")

    def _plan(
        self, base_dir: Path, claims: Path, base: int
    ) -> tuple[list[tuple[str, Path]], list[str]]:
        """What is removed (what, path), and what is kept though make run may have made it."""
        removed: list[tuple[str, Path]] = []
        kept: list[str] = []
        database = Path(database_file()) if database_file() else None
        if database is not None and inside(database, base_dir):
            files = [database, *(database.with_name(database.name + s) for s in SQLITE_SIDE_FILES)]
            removed += [("the database", path) for path in files if path.exists()]
        else:
            kept.append(f"the database ({describe_database()}): not a file of this checkout")
        made = [
            ("the demo's credentials", base_dir / f".{CREDENTIALS_FILE}"),
            ("the demo's files", checkout.checkout_dir(base_dir)),
        ]
        store = Path(settings.WORKBENCH_STORE_DIR)
        if inside(store, base_dir):
            made.append(("the shared store", store))
        else:
            kept.append(f"the shared store ({store}): not a directory of this checkout")
        removed += [(what, path) for what, path in made if path.exists()]
        claim = read_uid_claim(claims, base)
        if claim is not None and claim.database == describe_database():
            removed.append((UID_CLAIM, claims / f"{base}.json"))
        elif claim is not None:
            kept.append(f"{claims / f'{base}.json'}: another installation's ({claim.described()})")
        return removed, kept
