"""The admin's home as a dashboard (issue 37): alerts first (a server failing, tools held
for an admin), then the servers' health, live downstream connections, held tools, today's
calls and the recent failures with their incident ids. Each read is scoped like the rest
of the admin: an operator sees every tenant, a member only their tenants.

Live connections come from the gateway's own metric (`workbench_downstream_connections`,
every worker of this host): with several replicas, each replica's dashboard counts its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from calls.models import CallRecord
from kernel.roles import is_operator, tenant_ids
from mcp_gateway import live_downstream
from toolboxes import server_status
from toolboxes.models import Server

RECENT_FAILURES = 8  # failed calls listed
RECENT_HOURS = 24  # how far back a failed call is recent
MAX_ALERTS = 12
MAX_LIVE_LINES = 8


@dataclass(frozen=True, slots=True)
class Alert:
    kind: str  # "failing" or "held": its colour and icon
    text: str
    url: str
    incident: str = ""


@dataclass
class Dashboard:
    alerts: list[Alert] = field(default_factory=list)
    servers: dict[str, int] = field(default_factory=dict)  # ok, failing, unchecked, total
    live_total: int = 0
    live: list[tuple[str, int]] = field(default_factory=list)
    held_total: int = 0
    held: list[tuple[str, int, str]] = field(default_factory=list)  # server, count, url
    today: dict[str, Any] = field(default_factory=dict)
    failures: list[CallRecord] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)


# A call's outcomes that are no failure: answered, or the server's question to the client
# (an input-required result, answered by the client's next call).
NOT_FAILED = ("ok", "input_required")


def _scoped(queryset: QuerySet[Any], path: str, user: Any) -> QuerySet[Any]:
    if is_operator(user):
        return queryset
    return queryset.filter(**{f"{path}__in": tenant_ids(user)})


def _name(server: Server) -> str:
    return f"{server.toolbox.tenant.slug}/{server.toolbox.name}/{server.name}"


def build(user: Any) -> Dashboard:
    board = Dashboard()
    servers = list(
        server_status.with_held(
            _scoped(Server.objects.select_related("toolbox__tenant"), "toolbox__tenant", user)
        ).order_by("toolbox__tenant__slug", "toolbox__name", "position", "pk")
    )
    _health(board, servers)
    _live(board, {server.toolbox.tenant.slug for server in servers}, is_operator(user))
    _today(board, _scoped(CallRecord.objects.all(), "tenant", user))
    pins = reverse("admin:toolboxes_toolpin_changelist")
    server_list = reverse("admin:toolboxes_server_changelist")
    calls = reverse("admin:calls_callrecord_changelist")
    board.links = {
        "servers": server_list,
        "failing": f"{server_list}?last_check_ok__exact=0",
        "unchecked": f"{server_list}?last_check_ok__isnull=True",
        "held": f"{pins}?status=held",
        "calls": calls,
        "failed_calls": f"{calls}?opens=all",
        "usage": reverse("admin:calls_callrecord_usage"),
    }
    return board


def _health(board: Dashboard, servers: list[Server]) -> None:
    counts = {"ok": 0, "failing": 0, "unchecked": 0, "total": len(servers)}
    pins = reverse("admin:toolboxes_toolpin_changelist")
    for server in servers:
        state = {True: "ok", False: "failing", None: "unchecked"}[server.last_check_ok]
        counts[state] += 1
        url = reverse("admin:toolboxes_server_change", args=[server.pk])
        if server.last_check_ok is False and server.enabled:
            ago = timezone.now() - (server.last_check_at or timezone.now())
            board.alerts.append(
                Alert(
                    "failing",
                    f"{_name(server)} is failing: {server.last_check_reason} ({_ago(ago)} ago)",
                    url,
                    server.last_check_incident,
                )
            )
        held = server_status.held_of(server).waiting
        if held:
            board.held_total += held
            query = urlencode({"server__id__exact": server.pk, "status": "held"})
            board.held.append((_name(server), held, f"{pins}?{query}"))
            board.alerts.append(
                Alert(
                    "held",
                    f"{held} tool definition{'s' if held != 1 else ''} held on {_name(server)}: "
                    "clients do not see them until an admin approves",
                    f"{pins}?{query}",
                )
            )
    board.alerts = board.alerts[:MAX_ALERTS]
    board.servers = counts


def _ago(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours = minutes // 60
    return f"{hours} h" if hours < 48 else f"{hours // 24} days"


def _live(board: Dashboard, slugs: set[str], operator: bool) -> None:
    """This host's live downstream connections, of the tenants the user sees."""
    lines = [
        (str(ref), count)
        for ref, count in live_downstream().items()
        if operator or ref.tenant in slugs
    ]
    board.live_total = sum(count for _, count in lines)
    board.live = sorted(lines, key=lambda line: (-line[1], line[0]))[:MAX_LIVE_LINES]


def _today(board: Dashboard, calls: QuerySet[CallRecord]) -> None:
    midnight = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    rows = (
        calls.filter(at__gte=midnight)
        .order_by()
        .values("meta_tool")
        .annotate(total=Count("pk"), failed=Count("pk", filter=~Q(outcome__in=NOT_FAILED)))
    )
    per_tool = {row["meta_tool"]: row["total"] for row in rows}
    board.today = {
        "calls": sum(per_tool.values()),
        "failed": sum(row["failed"] for row in rows),
        "per_meta_tool": sorted(per_tool.items()),
    }
    since = timezone.now() - timedelta(hours=RECENT_HOURS)
    board.failures = list(
        calls.filter(at__gte=since)
        .exclude(outcome__in=(*NOT_FAILED, "tool_error"))
        .select_related("tenant")
        .order_by("-at")[:RECENT_FAILURES]
    )
