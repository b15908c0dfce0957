"""export_config --tenant <slug> [--toolbox NAME] [--format workbench|desktop] [--output FILE]
| --all"""

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolboxes import server_status
from toolboxes.config_file import dumps, export_all, export_desktop, export_tenant
from toolboxes.management.commands.create_api_key import find_tenant
from toolboxes.models import Server, Tenant, Toolbox

FORMATS = ("workbench", "desktop")


class Command(BaseCommand):
    help = (
        "Write a tenant's toolboxes and servers as JSON (secrets decrypted: keep the file "
        "safe). --all writes every tenant; --toolbox one toolbox; --format desktop writes "
        'that toolbox as a desktop client\'s {"mcpServers": ...} file.'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--tenant", help="The tenant's slug.")
        which.add_argument("--all", action="store_true", help="Every tenant, by slug.")
        parser.add_argument("--toolbox", help="Only this toolbox of the tenant.")
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default="workbench",
            help='workbench (the default: grouped by toolbox) or desktop ({"mcpServers": ...} '
            "of one toolbox, as Claude Desktop, Cursor and Windsurf read it).",
        )
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        data = self._data(options)
        if options["format"] == "workbench":
            for line in server_status.filter_warnings(self._exported(options)):
                self.stderr.write(line)
        text = dumps(data)
        if options["output"]:
            write_owner_only(Path(options["output"]), text)
        else:
            self.stdout.write(text, ending="")

    def _data(self, options: dict[str, Any]) -> dict[str, Any]:
        desktop = options["format"] == "desktop"
        if options["all"]:
            if desktop or options["toolbox"]:
                raise CommandError(
                    "--all writes every tenant: --toolbox and --format desktop "
                    "need one tenant (--tenant <slug>)."
                )
            return export_all()
        if not options["tenant"]:
            known = ", ".join(Tenant.objects.values_list("slug", flat=True)) or "(none)"
            raise CommandError(
                f"Name a tenant with --tenant <slug>, or use --all. Tenants: {known}"
            )
        tenant = find_tenant(options["tenant"])
        if options["toolbox"] is None:
            if desktop:
                raise CommandError(
                    "--format desktop writes one toolbox: name it with --toolbox NAME. "
                    f"Toolboxes of tenant '{tenant.slug}': {_names(tenant)}"
                )
            return export_tenant(tenant)
        toolbox = tenant.toolboxes.filter(name=options["toolbox"]).first()
        if toolbox is None:
            raise CommandError(
                f"Tenant '{tenant.slug}' has no toolbox '{options['toolbox']}'. "
                f"Toolboxes: {_names(tenant)}"
            )
        if not desktop:
            return {"toolboxes": {toolbox.name: export_tenant(tenant)["toolboxes"][toolbox.name]}}
        data, notes = export_desktop(toolbox)
        for note in notes:
            self.stderr.write(note)
        return data

    def _exported(self, options: dict[str, Any]) -> list[Server]:
        """The servers the export holds (the checks above passed), in the file's order."""
        servers = Server.objects.select_related("toolbox__tenant")
        if not options["all"]:
            servers = servers.filter(toolbox__tenant__slug=options["tenant"])
        if options["toolbox"] is not None:
            servers = servers.filter(toolbox__name=options["toolbox"])
        return list(servers.order_by("toolbox__tenant__slug", "toolbox__name", "position", "pk"))


def _names(tenant: Tenant) -> str:
    names = Toolbox.objects.filter(tenant=tenant).order_by("name").values_list("name", flat=True)
    return ", ".join(names) or "(none)"


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
