"""A logging filter that bounds repeats: a downstream printing garbage makes the SDK log a
traceback per line; past `per_minute` records of one message in a minute, the rest are
dropped and counted in the next one let through."""

from __future__ import annotations

import logging
import time


class RepeatLimit(logging.Filter):
    def __init__(self, per_minute: int = 20) -> None:
        super().__init__()
        self.per_minute = per_minute
        self._seen: dict[tuple[str, str], tuple[float, int, int]] = {}  # start, kept, dropped

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = time.monotonic()
        start, kept, dropped = self._seen.get(key, (now, 0, 0))
        if now - start >= 60:
            if dropped:
                record.msg = f"{record.msg} [{dropped} similar messages dropped]"
            start, kept, dropped = now, 0, 0
        if kept >= self.per_minute:
            self._seen[key] = (start, kept, dropped + 1)
            return False
        self._seen[key] = (start, kept + 1, dropped)
        if len(self._seen) > 10_000:  # many distinct messages: forget the oldest windows
            self._seen.clear()
        return True
