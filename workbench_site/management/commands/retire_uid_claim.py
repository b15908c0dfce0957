"""retire_uid_claim [--base N]: the operator's retirement of a host's claim of a sandbox
uid base, for an installation gone for good that no gateway retires by itself (its
database on a server no longer there, say). Refused while a gateway of it runs."""

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_gateway import StartRefused, retire_uid_claim


class Command(BaseCommand):
    help = (
        "Retire the claim of a sandbox uid base (WORKBENCH_SANDBOX_UID_BASE by default) in "
        "WORKBENCH_SANDBOX_UID_CLAIMS_DIR, once the installation that made it is gone."
    )
    requires_system_checks: list[str] = []  # reads no database and no store

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base", type=int, default=settings.WORKBENCH_SANDBOX_UID_BASE)

    def handle(self, *args: Any, **options: Any) -> None:
        base, directory = options["base"], Path(settings.WORKBENCH_SANDBOX_UID_CLAIMS_DIR)
        try:
            retired = retire_uid_claim(directory, base)
        except StartRefused as exc:
            raise CommandError(str(exc)) from exc
        if retired is None:
            self.stdout.write(
                f"No claim of WORKBENCH_SANDBOX_UID_BASE={base} in {directory}: nothing to retire."
            )
            return
        self.stdout.write(
            f"Retired the claim of WORKBENCH_SANDBOX_UID_BASE={base} ({retired.described()}): "
            "the next gateway to start with that base claims it."
        )
