"""import_config <file|-> --tenant <slug> [--replace] [--toolbox NAME] [--create-tenant]"""

import sys
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from toolboxes import server_status
from toolboxes.config_file import (
    EXPORT_KEY,
    ConfigError,
    import_mcp_servers,
    import_tenant,
    loads,
)
from toolboxes.management.commands.create_api_key import find_tenant
from toolboxes.management.commands.create_tenant import first_error
from toolboxes.models import Server, Tenant


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
        parser.add_argument(
            "--create-tenant",
            action="store_true",
            help="Create the tenant when there is none of that slug (with the import: all or "
            "nothing).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = options["file"]
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read {source}: {exc}") from None
        toolbox = options["toolbox"]
        try:
            with transaction.atomic():  # a tenant created here goes with a failed import
                tenant, created = self._tenant(options["tenant"], options["create_tenant"])
                data = loads(text)
                if toolbox and isinstance(data, dict) and EXPORT_KEY not in data:
                    servers = import_mcp_servers(tenant, toolbox, data, replace=options["replace"])
                    summary = f"{servers} server(s) into toolbox '{toolbox}' of tenant"
                    names = [toolbox]
                else:
                    toolboxes, servers = import_tenant(tenant, data, replace=options["replace"])
                    summary = f"{toolboxes} toolbox(es), {servers} server(s) into tenant"
                    names = list(data[EXPORT_KEY])
        except ConfigError as exc:
            raise CommandError(f"Nothing imported: {exc}") from None
        if created:
            self.stdout.write(f"Created tenant '{tenant.slug}'.")
        self.stdout.write(f"Imported {summary} '{tenant.slug}'.")
        imported = list(
            Server.objects.filter(toolbox__tenant=tenant, toolbox__name__in=names)
            .select_related("toolbox__tenant")
            .order_by("toolbox__name", "position", "pk")
        )
        for line in server_status.filter_warnings(imported) + server_status.unchecked_filters(
            imported, tenant.slug
        ):
            self.stderr.write(line)

    def _tenant(self, slug: str, create: bool) -> tuple[Tenant, bool]:
        if create and not Tenant.objects.filter(slug=slug).exists():
            tenant = Tenant(slug=slug)
            try:
                tenant.full_clean()
            except ValidationError as exc:
                raise CommandError(first_error(exc)) from None
            tenant.save()
            return tenant, True
        try:
            return find_tenant(slug), False
        except CommandError as exc:
            hint = "Add --create-tenant to create it with the import."
            raise CommandError(f"{exc}. {hint}") from None
