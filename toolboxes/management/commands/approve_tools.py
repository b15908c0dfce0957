"""approve_tools TENANT TOOLBOX SERVER [--all | TOOL...] [--reject]: decide held tools."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolboxes import pins
from toolboxes.models import Server, ToolPin


class Command(BaseCommand):
    help = (
        "Approve (or --reject) the definitions a server offers now for held tools; "
        "without tools or --all, list the server's held tools."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant")
        parser.add_argument("toolbox")
        parser.add_argument("server")
        parser.add_argument("tools", nargs="*", metavar="TOOL")
        parser.add_argument("--all", action="store_true", help="every held tool of the server")
        parser.add_argument("--reject", action="store_true", help="reject instead of approve")

    def handle(self, *args: Any, **options: Any) -> None:
        server = Server.objects.filter(
            toolbox__tenant__slug=options["tenant"],
            toolbox__name=options["toolbox"],
            name=options["server"],
        ).first()
        if server is None:
            raise CommandError(
                f"No server '{options['server']}' in toolbox '{options['toolbox']}' "
                f"of tenant '{options['tenant']}'"
            )
        held = {pin.name: pin for pin in pins.held(ToolPin.objects.filter(server=server))}
        names: list[str] = options["tools"]
        if options["all"] and names:
            raise CommandError("Give tool names or --all, not both")
        if not names and not options["all"]:
            for pin in held.values():
                self.stdout.write(f"{pin.name}\t{pin.status}")
            if not held:
                self.stdout.write("No held tools.")
            return
        unknown = [name for name in names if name not in held]
        if unknown:
            listed = ", ".join(sorted(held)) or "(none)"
            raise CommandError(f"Not held: {', '.join(unknown)}. Held tools: {listed}")
        chosen = list(held.values()) if options["all"] else [held[name] for name in names]
        count = pins.reject(chosen) if options["reject"] else pins.approve(chosen)
        verb = "Rejected" if options["reject"] else "Approved"
        self.stdout.write(f"{verb} {count} tool definition(s) of {server.toolbox}/{server.name}.")
