"""What a downstream server announces on its own: notifications, read off the connection's
stream in the order they came, before the SDK sees them.

- Every notification but `notifications/tools/list_changed` spends a token of the
  connection's bucket (`RATE_PER_SECOND`, `BURST`); past it, the notification is dropped
  here (the SDK would otherwise start a task per message), counted through the recorder,
  and the operator told once per burst in the log: when the dropping starts, and with the
  count when it ends (the bucket half full again, or the connection closing).
- `notifications/message` (a log message): into the gateway's log (tenant, server, level,
  redacted), and to the one call in flight on the connection when there is exactly one (a
  stdio or shared session carries no tie between a notification and the call it belongs
  to: with two calls in flight it belongs to neither, and only the gateway's log has it).
- `notifications/tools/list_changed`: the connection lists the server's tools again.

Anything else admitted goes on to the SDK's session unchanged (progress, cancellation).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification
from pydantic import ValidationError

from kernel.redaction import Redactor

logger = logging.getLogger("workbench.downstream.log")
rate_logger = logging.getLogger("workbench.downstream")

LOG_MESSAGE = "notifications/message"
TOOLS_CHANGED = "notifications/tools/list_changed"
# Per connection: a server may send this many notifications a second, in bursts of `BURST`.
RATE_PER_SECOND = 100.0
BURST = 500
# Drops are handed to the metric this many at a time (and at a burst's end, and at close).
COUNT_BATCH = 256

# MCP's levels (RFC 5424) as Python's.
PYTHON_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
# The longest a log message's data is kept in the gateway's log, in characters.
MAX_LOGGED_CHARS = 4000


class TokenBucket:
    """`rate` tokens a second, at most `burst` kept."""

    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.stamp = time.monotonic()

    def take(self, now: float) -> bool:
        tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if tokens < 1.0:
            self.tokens = tokens
            return False
        self.tokens = tokens - 1.0
        return True


LogSink = Callable[[types.LoggingMessageNotificationParams], None]


class Notifications:
    """One connection's notifications: `admit` is called with each item its stream yields,
    in order, and says whether the SDK gets it.

    `tenant`, `server`: for the log lines; `redact`: the server's redactor (read at each
    message: it is known once the connection starts); `sink`: where an attributable log
    message goes (None: nowhere but the log); `tools_changed`: called on `list_changed`;
    `dropped`: called with the number of notifications dropped (the recorder's metric).
    """

    def __init__(
        self,
        label: str,
        tenant: str,
        server: str,
        redact: Callable[[], Redactor],
        sink: Callable[[], LogSink | None],
        tools_changed: Callable[[], None],
        dropped: Callable[[int], None],
        *,
        rate: float = RATE_PER_SECOND,
        burst: int = BURST,
    ) -> None:
        self.label = label
        self.tenant = tenant
        self.server = server
        self._redact = redact
        self._sink = sink
        self._tools_changed = tools_changed
        self._dropped = dropped
        self.bucket = TokenBucket(rate, burst)
        self.dropped_total = 0
        self._burst_dropped = 0  # dropped since the operator was told
        self._uncounted = 0  # dropped and not yet handed to `dropped` (in batches)

    def admit(self, item: Any) -> bool:
        if not isinstance(item, SessionMessage):
            return True
        message = item.message
        if not isinstance(message, JSONRPCNotification):
            return True
        method = message.method
        if method == TOOLS_CHANGED:  # never dropped: coalesced by the connection instead
            self._tools_changed()
            return False
        if not self.bucket.take(time.monotonic()):
            self._drop()
            return False
        if self._burst_dropped and self.bucket.tokens >= self.bucket.burst / 2:
            self._burst_ended()  # the server has kept under the rate for a while
        if method == LOG_MESSAGE:
            self._log(message.params)
            return False
        return True

    def _drop(self) -> None:
        if not self._burst_dropped:
            rate_logger.warning(
                "[%s] the server sends notifications faster than %g a second: "
                "dropping them until it slows down",
                self.label,
                self.bucket.rate,
                extra={"tenant": self.tenant, "source": self.label},
            )
        self._burst_dropped += 1
        self.dropped_total += 1
        self._uncounted += 1
        if self._uncounted >= COUNT_BATCH:
            self._count()

    def _count(self) -> None:
        if self._uncounted:
            self._dropped(self._uncounted)
            self._uncounted = 0

    def _burst_ended(self) -> None:
        self._count()
        rate_logger.warning(
            "[%s] %d notifications dropped (over the rate)",
            self.label,
            self._burst_dropped,
            extra={"tenant": self.tenant, "source": self.label},
        )
        self._burst_dropped = 0

    def close(self) -> None:
        """The connection ends: the operator hears of a burst still going on."""
        if self._burst_dropped:
            self._burst_ended()
        self._count()

    def _log(self, raw: dict[str, Any] | None) -> None:
        try:
            params = types.LoggingMessageNotificationParams.model_validate(raw or {})
        except ValidationError:
            rate_logger.info("[%s] a malformed log message was dropped", self.label)
            return
        redact = self._redact()
        data = params.data if isinstance(params.data, str) else _json(params.data)
        name = f" {params.logger}" if params.logger else ""
        logger.log(
            PYTHON_LEVELS.get(params.level, logging.INFO),
            "[%s]%s %s: %s",
            self.label,
            redact(name),
            params.level,
            redact(data[:MAX_LOGGED_CHARS]),
            extra={
                "tenant": self.tenant,
                "server": self.server,
                "mcp_level": params.level,
                "source": self.label,
            },
        )
        sink = self._sink()
        if sink is not None:
            sink(params)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:
        return repr(value)
