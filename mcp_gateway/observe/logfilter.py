"""Logging filters: one that bounds what one source may write, without silencing the
others, and one that drops messages known to be noise (`DropMessages`).

A misbehaving downstream can print forever, or make the SDK log a traceback per line. Two
bounds, both per source (a downstream server's label where the record names one through
`extra={"source": ...}`, else the logger's name), in windows of a minute:
- repeats: past `per_minute` records of one message (its text as formatted) the rest are
  dropped, and counted in the next one let through;
- budget: past `budget_per_minute` records of any text, the rest are dropped and counted.
Distinct messages are not repeats, and one chatty source never uses another's budget.
"""

from __future__ import annotations

import logging
import time

WINDOW_SECONDS = 60.0
MAX_TRACKED = 10_000  # distinct (source, message) pairs remembered before forgetting all


class RepeatLimit(logging.Filter):
    def __init__(self, per_minute: int = 20, budget_per_minute: int = 600) -> None:
        super().__init__()
        self.per_minute = per_minute
        self.budget_per_minute = budget_per_minute
        # key: (window start, kept, dropped); keys are (source, message) or (source,).
        self._windows: dict[tuple[str, ...], tuple[float, int, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        source = str(getattr(record, "source", "") or record.name)
        now = time.monotonic()
        repeat_key = (source, record.getMessage())
        repeats_ok, repeats_dropped = self._count(repeat_key, self.per_minute, now)
        if not repeats_ok:
            return False  # a dropped repeat does not also spend the source's budget
        budget_ok, budget_dropped = self._count((source,), self.budget_per_minute, now)
        if not budget_ok:
            return False
        notes = []
        if repeats_dropped:
            notes.append(f"{repeats_dropped} similar messages dropped")
        if budget_dropped:
            notes.append(f"{budget_dropped} messages from {source} dropped (over budget)")
        if notes:
            record.msg = f"{record.msg} [{'; '.join(notes)}]"
        if len(self._windows) > MAX_TRACKED:
            self._windows.clear()
        return True

    def _count(self, key: tuple[str, ...], limit: int, now: float) -> tuple[bool, int]:
        """Counts one record under key: (let through?, drops to report from a past window)."""
        start, kept, dropped = self._windows.get(key, (now, 0, 0))
        reported = 0
        if now - start >= WINDOW_SECONDS:
            reported, start, kept, dropped = dropped, now, 0, 0
        if kept >= limit:
            self._windows[key] = (start, kept, dropped + 1)
            return False, 0
        self._windows[key] = (start, kept + 1, dropped)
        return True, reported


class DropMessages(logging.Filter):
    """Drops records whose message (unformatted) is one of `messages`."""

    def __init__(self, messages: frozenset[str]) -> None:
        super().__init__()
        self.messages = messages

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg not in self.messages
