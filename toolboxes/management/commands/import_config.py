"""import_config <file|-> --tenant <slug> [--replace] [--toolbox NAME] [--create-tenant]
[--dry-run]: prints what the import changed (the plan `PUT .../config` answers), or with
`--dry-run` what it would change, writing nothing."""

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
    export_tenant,
    import_mcp_servers,
    import_tenant,
    loads,
)
from toolboxes.config_file.plan import Plan, plan_of
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
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Print what the import would change, and change nothing.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = options["file"]
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read {source}: {exc}") from None
        toolbox, dry_run = options["toolbox"], options["dry_run"]
        try:
            with transaction.atomic():  # a tenant created here goes with a failed import
                tenant, created = self._tenant(options["tenant"], options["create_tenant"])
                before = export_tenant(tenant)
                data = loads(text)
                if toolbox and isinstance(data, dict) and EXPORT_KEY not in data:
                    import_mcp_servers(tenant, toolbox, data, replace=options["replace"])
                    names = [toolbox]
                else:
                    import_tenant(tenant, data, replace=options["replace"])
                    names = list(data[EXPORT_KEY])
                plan = plan_of(before, export_tenant(tenant))
                if dry_run:
                    transaction.set_rollback(True)
        except ConfigError as exc:
            raise CommandError(f"Nothing imported: {exc}") from None
        self.stdout.write(outcome(tenant.slug, created, plan, dry_run))
        if dry_run:
            return
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


def outcome(slug: str, created: bool, plan: Plan, dry_run: bool) -> str:
    """What the import did to the tenant, or with `dry_run` would do."""
    lines = []
    if created:
        lines.append(f"{'Would create' if dry_run else 'Created'} tenant '{slug}'.")
    if plan.empty:
        lines.append("No change.")
    elif dry_run:
        lines.append(f"Would import into tenant '{slug}': {plan.summary()}.")
    else:
        lines.append(f"Imported into tenant '{slug}': {plan.summary()}.")
    if dry_run:
        lines.append("Dry run: nothing was written.")
    return "\n".join(lines)
