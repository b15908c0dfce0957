"""Redaction: a server's secret values out of text meant for a log or the call log.

One redactor per server (its env and header values, secret catalog parameters, what its
`${VAR}` references expanded to), matching every spelling such text gives a value; and a
log record factory that applies the redactor of the server whose task is running.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from contextvars import ContextVar
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"
# Values shorter than this are not redacted: "1" or "on" would garble every log line.
MIN_SECRET_LENGTH = 4
# What an HTTP client leaves unencoded in a URL's query (httpx: printable ASCII but space,
# '"', '#', '<', '>').
_URL_KEPT = "".join(chr(i) for i in range(0x21, 0x7F) if chr(i) not in '"#<>')


class Redactor:
    """Replaces a server's secret values (env and header values, secret catalog parameters,
    and what its references expanded to) in text meant for the log or the call log, in
    each spelling such text gives them."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.values = frozenset(value for value in values if len(value) >= MIN_SECRET_LENGTH)
        forms = {form for value in self.values for form in _spellings(value)}
        # Longest first, so that a value containing another is replaced whole.
        ordered = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @classmethod
    def joined(cls, redactors: Iterable[Redactor]) -> Redactor:
        """One redactor for text holding several servers' output (an open's tool list)."""
        return cls(frozenset().union(*(redactor.values for redactor in redactors)))

    def __call__(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text) if self._pattern else text

    def subn(self, text: str, replacement: str) -> tuple[str, int]:
        """`text` with each value replaced by `replacement`, and how many were (the
        secrets guard's: `mcp_gateway.metatools.secret_guard`)."""
        return self._pattern.subn(replacement, text) if self._pattern else (text, 0)

    def __bool__(self) -> bool:
        return self._pattern is not None


def _spellings(value: str) -> set[str]:
    """A value as it is written, escaped inside a JSON string (a captured payload), and
    percent-encoded in a URL (the HTTP client's request line)."""
    return {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        quote(value, safe=""),
        quote(value, safe=_URL_KEPT),
        quote_plus(value, safe=""),
    }


def secret_values(env_values: Iterable[str], header_values: Iterable[str]) -> set[str]:
    """What to redact for one server: every env and header value, and each word of a
    header value (`Bearer <token>` may be logged as the token alone)."""
    found = set(env_values)
    for value in header_values:
        found.add(value)
        found.update(part for part in value.split() if len(part) >= 8)
    return found


# The redactor of the server whose task is running: set by a connection's owner task (and
# by a call on it), so that whatever logs inside it (the HTTP client's request lines,
# httpcore, the SDK) is redacted too.
current_redactor: ContextVar[Redactor | None] = ContextVar("workbench_redactor", default=None)


def redact_log_records() -> None:
    """Redact the current server's secret values from every log record as it is made:
    every logger (httpx2, httpcore2.*, mcp.*) and every handler (console, caplog, any an
    operator adds) then see the same clean record. A filter would cover one handler, or
    one logger but not its children. Idempotent."""
    make = logging.getLogRecordFactory()
    if getattr(make, "workbench_redacts", False):
        return

    def redacting(*args: object, **kwargs: object) -> logging.LogRecord:
        record = make(*args, **kwargs)
        redact = current_redactor.get()
        if redact:
            _redact_record(record, redact)
        return record

    redacting.workbench_redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(redacting)


_FORMATTER = logging.Formatter()


def _redact_record(record: logging.LogRecord, redact: Redactor) -> None:
    """The message and any traceback; a traceback that held a secret is folded into the
    message, redacted (formatters would print it again from `exc_info`)."""
    try:
        message = record.getMessage()
    except Exception:  # a bad format: the handler reports it, with nothing formatted
        return
    cleaned = redact(message)
    if record.exc_info:
        trace = _FORMATTER.formatException(record.exc_info)
        if (clean_trace := redact(trace)) != trace:
            cleaned = f"{cleaned}\n{clean_trace}"
            record.exc_info, record.exc_text = None, None
    if cleaned != message:
        record.msg, record.args = cleaned, None
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
