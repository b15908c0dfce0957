"""export_catalog [--output FILE]"""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from toolboxes.catalog.entries import export_catalog
from toolboxes.config_file import dumps
from toolboxes.management.commands.export_config import write_owner_only


class Command(BaseCommand):
    help = (
        "Write the catalog as JSON (env and header values decrypted: the file is made "
        "readable by its owner alone); import_catalog reads it back."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        text = dumps(export_catalog())
        if options["output"]:
            # 0600 from creation (an existing file is made so first): it holds secrets.
            write_owner_only(Path(options["output"]), text)
        else:
            self.stdout.write(text, ending="")
