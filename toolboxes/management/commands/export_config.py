"""export_config --tenant <slug> [--output FILE] | --all"""

import os
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
            write_owner_only(Path(options["output"]), text)
        else:
            self.stdout.write(text, ending="")


def write_owner_only(path: Path, text: str) -> None:
    """Write the file readable by its owner alone (it holds decrypted secrets), from the
    moment it exists; an existing file is made owner-only before it is written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            fd = -1
            file.write(text)
    finally:
        if fd >= 0:
            os.close(fd)
