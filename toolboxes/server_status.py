"""A server's last connect result: stored, shown, and compared with its tool filters.

Written by an admin's check and by the gateway's own connects (`mcp_gateway`'s status
recorder), with `update()`: a status is not configuration, so no gateway reloads for it.
The tools of the last successful connect stay when a later one fails: the filter
checkboxes still list them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils import timezone
from django.utils.timesince import timesince

from toolboxes.models import Server

NOT_CHECKED = "not checked yet"
MAX_REASON = 1000


def save_result(
    server_id: int, ok: bool, milliseconds: int, reason: str, definitions: list[dict[str, Any]]
) -> None:
    fields: dict[str, Any] = {
        "last_check_ok": ok,
        "last_check_at": timezone.now(),
        "last_check_ms": milliseconds,
        "last_check_reason": reason[:MAX_REASON],
    }
    if ok:
        fields["last_check_tools"] = definitions
    Server.objects.filter(pk=server_id).update(**fields)


def offered_names(server: Server) -> list[str] | None:
    """The tools the server offered at its last successful connect; None: never known."""
    if not server.last_check_tools and server.last_check_ok is not True:
        return None
    return [tool["name"] for tool in server.last_check_tools or []]


def missing_filters(server: Server) -> list[str]:
    """Filter names the server did not offer at its last successful connect."""
    offered = offered_names(server)
    filters = server.tool_filters or []
    if offered is None or "*" in filters:
        return []
    return [name for name in filters if name not in offered]


def filter_warning(missing: list[str]) -> str:
    return f"The filter names tools the server does not offer: {', '.join(missing)}."


def filter_warnings(servers: Iterable[Server]) -> list[str]:
    """What check_config reports for filters, as warning lines for the commands that read
    or write a configuration without connecting (import_config, export_config): each
    server whose filter names tools it did not offer at its last successful connect."""
    return [
        f"Warning: server {server.toolbox.tenant.slug}/{server.toolbox.name}/{server.name}: "
        f"{filter_warning(missing)}"
        for server in servers
        if (missing := missing_filters(server))
    ]


def unchecked_filters(servers: Iterable[Server], tenant_slug: str) -> list[str]:
    """A line naming servers whose filters could not be compared (never connected), and
    the command that compares them."""
    names = [
        f"{server.toolbox.name}/{server.name}"
        for server in servers
        if offered_names(server) is None and "*" not in (server.tool_filters or ["*"])
    ]
    if not names:
        return []
    return [
        f"Not checked yet, so their tool filters are not compared with the tools they offer: "
        f"{', '.join(names)}. Run: manage.py check_config --tenant {tenant_slug}"
    ]


def status_text(server: Server) -> str:
    """One line for lists: ok or failing, tools, connect time, how long ago."""
    if server.last_check_ok is None or server.last_check_at is None:
        return NOT_CHECKED
    ago = f"{timesince(server.last_check_at)} ago".replace("\xa0", " ")
    if server.last_check_ok:
        count = len(server.last_check_tools or [])
        return f"ok: {count} tool{'s' if count != 1 else ''} in {server.last_check_ms} ms, {ago}"
    return f"failing: {server.last_check_reason} ({ago})"
