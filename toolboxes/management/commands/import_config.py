"""import_config <file|-> --tenant <slug> [--replace] [--toolbox NAME]"""

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolboxes.config_file import (
    EXPORT_KEY,
    ConfigError,
    import_mcp_servers,
    import_tenant,
    loads,
)
from toolboxes.management.commands.create_api_key import find_tenant


class Command(BaseCommand):
    help = (
        "Read toolboxes and servers from JSON (the export_config format, or with --toolbox a "
        'desktop client\'s {"mcpServers": ...} file or VS Code\'s {"servers": ...}). '
        "All or nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The JSON file, or - for standard input.")
        parser.add_argument("--tenant", required=True, help="The tenant's slug.")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Make the configuration exactly the file's (removes what it does not list).",
        )
        parser.add_argument(
            "--toolbox",
            help='Read a desktop {"mcpServers": ...} (or VS Code {"servers": ...}) file into '
            "this toolbox.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = find_tenant(options["tenant"])
        source = options["file"]
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read {source}: {exc}") from None
        try:
            data = loads(text)
            toolbox = options["toolbox"]
            if toolbox and isinstance(data, dict) and EXPORT_KEY not in data:
                servers = import_mcp_servers(tenant, toolbox, data, replace=options["replace"])
                summary = f"{servers} server(s) into toolbox '{toolbox}'"
            else:
                toolboxes, servers = import_tenant(tenant, data, replace=options["replace"])
                summary = f"{toolboxes} toolbox(es), {servers} server(s)"
        except ConfigError as exc:
            raise CommandError(f"Nothing imported: {exc}") from None
        self.stdout.write(f"Imported {summary} into tenant '{tenant.slug}'.")
