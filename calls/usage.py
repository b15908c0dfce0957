"""A tenant's usage over a window (or one key's): every meta-tool's calls, the error rate,
p50/p95 per tool, per server and per key, the tool policies' decisions (allowed by a
rule, denied, asked, approved, refused, expired), and calls per time slot drawn as a chart with
real axes (server-rendered SVG: no JavaScript, nothing from outside, as the admin's
Content-Security-Policy wants)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from kernel import approvals, tool_policy


@dataclass(frozen=True, slots=True)
class Window:
    span: timedelta
    slot: timedelta
    slot_name: str  # the chart's bars: calls per <slot_name>
    label_format: str  # a slot's start on the time axis (strftime, local time)


WINDOWS = {
    "hour": Window(timedelta(hours=1), timedelta(minutes=5), "5 minutes", "%H:%M"),
    "day": Window(timedelta(days=1), timedelta(hours=1), "hour", "%H:%M"),
    "week": Window(timedelta(days=7), timedelta(hours=6), "6 hours", "%a %H:%M"),
    "month": Window(timedelta(days=30), timedelta(days=1), "day", "%b %d"),
}
MAX_ROWS = 200_000  # the usage page reads at most this many rows of a window
MAX_LINES = 50  # rows of a per-tool, per-server or per-key table
TIME_LABELS = 6  # labels on the time axis, at most
# The chart's box and its plot area inside it (room for the axes' labels).
CHART_WIDTH, CHART_HEIGHT = 760, 200
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 48, 12, 10, 34


@dataclass
class Line:
    name: str
    calls: int
    errors: int
    p50: float
    p95: float
    link: dict[str, Any] = field(default_factory=dict)  # the call log's filter for its rows

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile of sorted values."""
    if not values:
        return 0.0
    index = max(0, min(len(values) - 1, math.ceil(share * len(values)) - 1))
    return values[index]


Rows = dict[str, list[tuple[float, bool]]]


def _lines(groups: Rows, links: dict[str, dict[str, Any]] | None = None) -> list[Line]:
    lines = []
    for name, rows in groups.items():
        durations = sorted(duration for duration, _ in rows)
        errors = sum(1 for _, failed in rows if failed)
        lines.append(
            Line(
                name,
                len(rows),
                errors,
                percentile(durations, 0.5),
                percentile(durations, 0.95),
                (links or {}).get(name, {}),
            )
        )
    return sorted(lines, key=lambda line: (-line.calls, line.name))[:MAX_LINES]


def slot_start(moment: datetime, slot: timedelta) -> datetime:
    """The start of the slot `moment` falls in, in local time: 5-minute slots start on the
    5 minutes, hours on the hour, 6 hours at 0, 6, 12, 18 h, days at midnight."""
    local = timezone.localtime(moment)
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    if slot >= timedelta(days=1):
        return midnight
    into_day = (local - midnight) // slot
    return midnight + into_day * slot


def who(key_id: int | None, prefix: str, label: str, member: str) -> str:
    """A caller as the usage page names it: the key (prefix and label) or the member."""
    if key_id is not None or prefix:
        return f"{prefix} {label}".strip() if label else prefix or f"key {key_id}"
    return f"OAuth: {member}" if member else "unknown"


def summary(
    records: QuerySet[Any],
    window: str,
    now: datetime | None = None,
    held: QuerySet[Any] | None = None,
) -> dict[str, Any]:
    """Every call of the window (all meta-tools): totals, per meta-tool, per tool, per
    server, per key, and per slot for the chart; with `held` (the same tenant's
    approvals), the tool policies' decisions."""
    chosen = WINDOWS[window]
    span, slot = chosen.span, chosen.slot
    now = now or timezone.now()
    end = slot_start(now, slot) + slot
    start = end - span
    rows = list(
        records.filter(at__gte=start, at__lt=end)
        .order_by("-at")
        .values_list(
            "at",
            "meta_tool",
            "toolbox",
            "server",
            "tool",
            "duration_ms",
            "outcome",
            "key_id",
            "key_prefix",
            "key__label",
            "member",
        )[:MAX_ROWS]
    )
    by_meta: Rows = defaultdict(list)
    by_tool: Rows = defaultdict(list)
    by_server: Rows = defaultdict(list)
    by_key: Rows = defaultdict(list)
    links: dict[str, dict[str, Any]] = {}
    slots = [0] * round(span / slot)
    failed_slots = [0] * len(slots)
    errors = 0
    for at, meta, toolbox, server, tool, duration, outcome, key_id, prefix, label, member in rows:
        failed = outcome != "ok"
        errors += failed
        by_meta[meta].append((duration, failed))
        if meta == "use_tool" and tool:
            name = f"{toolbox}/{server}/{tool}"
            by_tool[name].append((duration, failed))
            links[name] = {"tool": tool, "server": server}
        if server:
            by_server[f"{toolbox}/{server}"].append((duration, failed))
            links[f"{toolbox}/{server}"] = {"server": server}
        caller = who(key_id, prefix, label or "", member)
        by_key[caller].append((duration, failed))
        if key_id is not None:
            links[caller] = {"key__id__exact": key_id}
        index = min(len(slots) - 1, max(0, int((at - start) / slot)))
        slots[index] += 1
        failed_slots[index] += failed
    starts = [start + index * slot for index in range(len(slots))]
    return {
        "window": window,
        "start": start,
        "end": end,
        "calls": len(rows),
        "errors": errors,
        "error_rate": errors / len(rows) if rows else 0.0,
        "meta_tools": _lines(by_meta),
        "tools": _lines(by_tool, links),
        "servers": _lines(by_server, links),
        "keys": _lines(by_key, links),
        "chart": chart(slots, failed_slots, starts, chosen),
        "truncated": len(rows) >= MAX_ROWS,
        "decisions": decisions(records, held, start, end) if held is not None else None,
    }


def decisions(
    records: QuerySet[Any], held: QuerySet[Any], start: datetime, end: datetime
) -> dict[str, int]:
    """The tool policies' decisions of the window: calls a rule allowed (or denied, or
    asked a person for) as the call log names them, and the held calls asked in it by
    what became of them (approved: run or not yet; refused; expired; still waiting)."""
    verbs = tool_policy.VERBS
    logged = records.filter(at__gte=start, at__lt=end).aggregate(
        allowed=Count("pk", filter=Q(decision__startswith=verbs[tool_policy.ALLOW])),
        denied=Count("pk", filter=Q(decision__startswith=verbs[tool_policy.DENY])),
    )
    asked = held.filter(created_at__gte=start, created_at__lt=end).aggregate(
        asked=Count("pk"),
        approved=Count("pk", filter=Q(status__in=(approvals.APPROVED, approvals.USED))),
        refused=Count("pk", filter=Q(status=approvals.REFUSED)),
        expired=Count(
            "pk",
            filter=Q(status=approvals.EXPIRED)
            | Q(status=approvals.PENDING, expires_at__lte=timezone.now()),
        ),
        waiting=Count("pk", filter=Q(status=approvals.PENDING, expires_at__gt=timezone.now())),
    )
    return {**logged, **asked}


def nice_ceiling(value: int) -> int:
    """The y axis' top: the smallest of 1, 2, 4, 6, 8 x 10^n not under `value` (at least
    1), so that its half, the middle tick, is a whole number of calls too."""
    if value <= 2:
        return max(value, 1)
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 4, 6, 8, 10):
        if step * power >= value:
            return step * power
    return 10 * power  # pragma: no cover - the loop ends at 10


def chart(
    slots: list[int], failed: list[int], starts: list[datetime], window: Window
) -> dict[str, Any]:
    """Bars (calls, their failed part in red) in a plot area with a y axis (calls: 0, half
    and the top, gridlines) and a time axis (a slot's start every few bars)."""
    top = nice_ceiling(max(slots, default=0))
    plot_width = CHART_WIDTH - PLOT_LEFT - PLOT_RIGHT
    plot_height = CHART_HEIGHT - PLOT_TOP - PLOT_BOTTOM
    bottom = PLOT_TOP + plot_height
    width = plot_width / len(slots)

    def y(count: float) -> float:
        return round(bottom - plot_height * count / top, 1)

    bars = []
    for index, (count, bad) in enumerate(zip(slots, failed, strict=True)):
        x = PLOT_LEFT + index * width
        bars.append(
            {
                "x": round(x + 1, 1),
                "width": round(max(width - 2, 1), 1),
                "y": y(count),
                "height": round(bottom - y(count), 1),
                "bad_y": y(bad),
                "bad_height": round(bottom - y(bad), 1),
                "count": count,
                "bad": bad,
                "label": timezone.localtime(starts[index]).strftime(window.label_format),
            }
        )
    ticks = sorted({0, top // 2, top})  # 0 and the top, and their half when it is whole
    every = max(1, math.ceil(len(slots) / TIME_LABELS))
    return {
        "bars": bars,
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "left": PLOT_LEFT,
        "right": CHART_WIDTH - PLOT_RIGHT,
        "top": PLOT_TOP,
        "bottom": bottom,
        "peak": max(slots, default=0),
        "y_ticks": [{"value": tick, "y": y(tick)} for tick in ticks],
        "x_ticks": [
            {"x": round(PLOT_LEFT + index * width, 1), "label": bar["label"]}
            for index, bar in enumerate(bars)
            if index % every == 0
        ],
        "label_y": bottom + 16,
        "axis_title_y": CHART_HEIGHT - 2,
        "slot_name": window.slot_name,
    }
