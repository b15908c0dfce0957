"""A server's last connect result: stored, shown, and compared with its tool filters.

Written by an admin's check and by the gateway's own connects (`mcp_gateway`'s status
recorder), with `update()`: a status is not configuration, so no gateway reloads for it.
The tools of the last successful connect stay when a later one fails: the filter
checkboxes still list them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Case, Count, F, Func, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.timesince import timesince

from toolboxes.models import Server
from toolboxes.pins import held

NOT_CHECKED = "not checked yet"
MAX_REASON = 1000
MAX_INCIDENT = 40
MAX_CAUSE = 2000


def save_result(
    server_id: int,
    ok: bool,
    milliseconds: int,
    reason: str,
    definitions: list[dict[str, Any]],
    *,
    incident: str = "",
    cause: str = "",
    notes_checked: bool = False,
) -> None:
    """`reason`: a failing server's reason; an ok server's notes (lists of its that failed)
    when an admin's check looked at them (`notes_checked`), else the last check's notes
    are kept while the server stays ok (a gateway's connect does not look)."""
    kept = Case(When(last_check_ok=True, then=F("last_check_reason")), default=Value(""))
    fields: dict[str, Any] = {
        "last_check_ok": ok,
        "last_check_at": timezone.now(),
        "last_check_ms": milliseconds,
        "last_check_reason": reason[:MAX_REASON] if notes_checked or not ok else kept,
        "last_check_incident": "" if ok else incident[:MAX_INCIDENT],
        "last_check_cause": "" if ok else cause[:MAX_CAUSE],
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


@dataclass(frozen=True, slots=True)
class Held:
    """A server's tools not offered to clients for want of an admin's decision: waiting
    (new or changed definitions) and rejected."""

    waiting: int = 0
    rejected: int = 0

    @property
    def total(self) -> int:
        return self.waiting + self.rejected


def held_by_server(server_ids: Iterable[int]) -> dict[int, Held]:
    """Each server's held tools, in one query (servers with none are left out)."""
    rows = (
        held()
        .filter(server_id__in=list(server_ids))
        .values("server_id")
        .annotate(
            rejected=Count("pk", filter=Q(offered_hash=F("rejected_hash"))),
            total=Count("pk"),
        )
    )
    return {row["server_id"]: Held(row["total"] - row["rejected"], row["rejected"]) for row in rows}


def with_held(servers: QuerySet[Server]) -> QuerySet[Server]:
    """Servers with their held tools counted (`held_of` reads them): one query for a list."""
    pins = held().filter(server=OuterRef("pk")).order_by().values("server")
    count = Func(F("pk"), function="COUNT")
    rejected = pins.filter(offered_hash=F("rejected_hash"))
    return servers.annotate(
        held_total=Coalesce(Subquery(pins.annotate(n=count).values("n")), 0),
        held_rejected=Coalesce(Subquery(rejected.annotate(n=count).values("n")), 0),
    )


def held_of(server: Server) -> Held:
    """A server's held tools: counted with its row (`with_held`), else asked for."""
    total = getattr(server, "held_total", None)
    if total is None:
        return held_by_server([server.pk]).get(server.pk, Held())
    rejected = getattr(server, "held_rejected", 0)
    return Held(total - rejected, rejected)


def held_text(found: Held) -> str:
    """ ", 2 held" (and ", 1 rejected"), or nothing: what a status adds to its tools."""
    parts = [f"{found.waiting} held"] if found.waiting else []
    parts += [f"{found.rejected} rejected"] if found.rejected else []
    return "".join(f", {part}" for part in parts)


def status_text(server: Server, found: Held | None = None) -> str:
    """One line for lists: ok (its tools, those held among them, and the lists of its that
    failed at the last check) or failing (its reason and incident), connect time, how long
    ago."""
    if server.last_check_ok is None or server.last_check_at is None:
        return NOT_CHECKED
    ago = f"{timesince(server.last_check_at)} ago".replace("\xa0", " ")
    if server.last_check_ok:
        count = len(server.last_check_tools or [])
        found = held_of(server) if found is None else found
        tools = f"{count} tool{'s' if count != 1 else ''}{held_text(found)}"
        notes = f"; {server.last_check_reason}" if server.last_check_reason else ""
        return f"ok: {tools}{',' if found.total else ''} in {server.last_check_ms} ms, {ago}{notes}"
    incident = f"; incident {server.last_check_incident}" if server.last_check_incident else ""
    return f"failing: {server.last_check_reason} ({ago}{incident})"
