"""`manage.py check_config [--tenant SLUG]`: connect every enabled server, as the gateway
would, and print a table; exit non-zero when any server fails (for cron and deploys)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_gateway import check_servers
from toolboxes import server_status
from toolboxes.models import Server, Tenant

HEADER = ("tenant", "toolbox", "server", "status", "tools", "reason")


def table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(HEADER))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


class Command(BaseCommand):
    help = (
        "Check every enabled server (all tenants, or one): connect it, list its tools, "
        "record the result as its status. Exits 1 when any server fails."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", metavar="SLUG", help="only this tenant's servers")

    def handle(self, *args: Any, **options: Any) -> None:
        servers = Server.objects.filter(enabled=True).select_related("toolbox__tenant")
        if options["tenant"]:
            if not Tenant.objects.filter(slug=options["tenant"]).exists():
                raise CommandError(f"No tenant '{options['tenant']}'.")
            servers = servers.filter(toolbox__tenant__slug=options["tenant"])
        chosen = list(servers.order_by("toolbox__tenant__slug", "toolbox__name", "position", "id"))
        if not chosen:
            self.stdout.write("No enabled servers.")
            return
        rows: list[tuple[str, ...]] = [HEADER]
        failed = warned = 0
        for server, result in zip(chosen, check_servers(chosen), strict=True):
            server.refresh_from_db(fields=["last_check_tools", "last_check_ok"])
            missing = server_status.missing_filters(server) if result.ok else []
            failed += not result.ok
            warned += bool(missing)
            said = [server_status.filter_warning(missing)] if missing else []
            reason = result.reason if not result.ok else "; ".join([*said, *result.notes])
            rows.append(
                (
                    server.toolbox.tenant.slug,
                    server.toolbox.name,
                    server.name,
                    "ok" if result.ok else "failing",
                    str(len(result.tools)) if result.ok else "-",
                    reason,
                )
            )
        self.stdout.write("\n".join(table(rows)))
        summary = f"{len(chosen) - failed} of {len(chosen)} servers connected"
        if warned:
            summary += f"; {warned} with filters naming tools the server does not offer"
        self.stdout.write(summary + ".")
        if failed:
            raise CommandError(f"{failed} server{'s' if failed != 1 else ''} failed.")
