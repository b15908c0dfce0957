"""A tenant's usage over a window: calls, error rate, p50/p95 per tool and per server, and
calls per time slot for a small chart (inline SVG, no JavaScript)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

WINDOWS = {
    "day": (timedelta(days=1), timedelta(hours=1)),
    "week": (timedelta(days=7), timedelta(hours=6)),
}
MAX_ROWS = 200_000  # the usage page reads at most this many rows of a window
CHART_WIDTH, CHART_HEIGHT = 720, 120


@dataclass
class Line:
    name: str
    calls: int
    errors: int
    p50: float
    p95: float

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile of sorted values."""
    if not values:
        return 0.0
    index = max(0, min(len(values) - 1, math.ceil(share * len(values)) - 1))
    return values[index]


def _lines(groups: dict[str, list[tuple[float, bool]]]) -> list[Line]:
    lines = []
    for name, rows in groups.items():
        durations = sorted(duration for duration, _ in rows)
        errors = sum(1 for _, failed in rows if failed)
        lines.append(
            Line(name, len(rows), errors, percentile(durations, 0.5), percentile(durations, 0.95))
        )
    return sorted(lines, key=lambda line: (-line.calls, line.name))


def summary(records: QuerySet[Any], window: str, now: datetime | None = None) -> dict[str, Any]:
    span, slot = WINDOWS[window]
    now = now or timezone.now()
    start = now - span
    rows = list(
        records.filter(at__gte=start, meta_tool="use_tool")
        .order_by("-at")
        .values_list("at", "toolbox", "server", "tool", "duration_ms", "outcome")[:MAX_ROWS]
    )
    by_tool: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    by_server: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    slots = [0] * int(span / slot)
    failed_slots = [0] * len(slots)
    errors = 0
    for at, toolbox, server, tool, duration, outcome in rows:
        failed = outcome != "ok"
        errors += failed
        by_tool[f"{toolbox}/{server}/{tool}"].append((duration, failed))
        by_server[f"{toolbox}/{server}"].append((duration, failed))
        index = min(len(slots) - 1, int((at - start) / slot))
        slots[index] += 1
        failed_slots[index] += failed
    return {
        "window": window,
        "calls": len(rows),
        "errors": errors,
        "error_rate": errors / len(rows) if rows else 0.0,
        "tools": _lines(by_tool),
        "servers": _lines(by_server),
        "chart": chart(slots, failed_slots),
        "truncated": len(rows) >= MAX_ROWS,
    }


def chart(slots: list[int], failed: list[int]) -> dict[str, Any]:
    """Bars (calls, with their failed part) scaled into a fixed box."""
    peak = max(slots) or 1
    width = CHART_WIDTH / len(slots)
    bars = []
    for index, (count, bad) in enumerate(zip(slots, failed, strict=True)):
        height = CHART_HEIGHT * count / peak
        bad_height = CHART_HEIGHT * bad / peak
        bars.append(
            {
                "x": round(index * width + 1, 1),
                "width": round(max(width - 2, 1), 1),
                "y": round(CHART_HEIGHT - height, 1),
                "height": round(height, 1),
                "bad_y": round(CHART_HEIGHT - bad_height, 1),
                "bad_height": round(bad_height, 1),
                "count": count,
                "bad": bad,
            }
        )
    return {"bars": bars, "width": CHART_WIDTH, "height": CHART_HEIGHT, "peak": peak}
