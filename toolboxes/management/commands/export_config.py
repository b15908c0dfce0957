"""export_config --tenant <slug> [--output FILE] | --all"""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolboxes.config_format import dumps, export_all, export_tenant
from toolboxes.management.commands.create_api_key import find_tenant
from toolboxes.models import Tenant


class Command(BaseCommand):
    help = (
        "Write a tenant's toolboxes and servers as JSON (secrets decrypted: keep the file "
        "safe). --all writes every tenant."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--tenant", help="The tenant's slug.")
        which.add_argument("--all", action="store_true", help="Every tenant, by slug.")
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["all"]:
            data = export_all()
        elif options["tenant"]:
            data = export_tenant(find_tenant(options["tenant"]))
        else:
            known = ", ".join(Tenant.objects.values_list("slug", flat=True)) or "(none)"
            raise CommandError(
                f"Name a tenant with --tenant <slug>, or use --all. Tenants: {known}"
            )
        text = dumps(data)
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
        else:
            self.stdout.write(text, ending="")
