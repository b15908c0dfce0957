"""import_catalog FILE... [--keep-existing]"""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolboxes.catalog.entries import entries_from_document, import_entries
from toolboxes.catalog.server_json import EntrySpec, RegistryError
from toolboxes.config_file import ConfigError, loads


class Command(BaseCommand):
    help = (
        "Read MCP Registry server.json files (schema 2025-12-11), or an export_catalog file, "
        "into the catalog: one entry per server.json, named from its `name`; an entry that "
        "exists is updated. All files or none."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument(
            "--keep-existing",
            action="store_true",
            help="Leave entries that already exist as they are.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        specs: list[EntrySpec] = []
        problems: list[str] = []
        for source in options["files"]:
            try:
                data = loads(Path(source).read_text(encoding="utf-8"))
                specs.extend(entries_from_document(data))
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(f"{source}: cannot read: {exc}")
            except (ConfigError, RegistryError) as exc:
                problems.append(f"{source}: {exc}")
        names = [spec.name for spec in specs]
        repeated = sorted({name for name in names if names.count(name) > 1})
        problems += [f"{name}: named by more than one file" for name in repeated]
        if not problems:
            try:
                entries = import_entries(specs, update=not options["keep_existing"])
            except RegistryError as exc:
                problems.append(str(exc))
        if problems:
            raise CommandError("Nothing imported:\n" + "\n".join(problems))
        listed = ", ".join(entry.name for entry in entries) or "none"
        self.stdout.write(f"Imported {len(entries)} catalog entries: {listed}.")
