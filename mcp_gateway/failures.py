"""Why a downstream failed, in two voices: a short classified phrase for the client, and
the full reason for the operator's log, joined by an incident id.

The client's phrase never holds downstream stderr, expanded `${VAR}` values or raw
network errors: a remote URL must not become a port scanner, nor a server's stderr a way
to read what it was given. Everything goes to ONE log line, with the incident id, the
full reason and the tail of stderr, with the server's secret values redacted.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

import anyio

from mcp_gateway.envrefs import ExpansionError

logger = logging.getLogger("workbench.incident")

# Phrases a client may see (the spec's examples, and the gateway's own).
COMMAND_NOT_FOUND = "the command was not found"
COMMAND_NOT_RUNNABLE = "the command could not be run"
CWD_MISSING = "the working directory does not exist"
EXITED_AT_START = "the server exited during start-up"
UNREACHABLE = "the server could not be reached"
START_TIMEOUT = "the server did not answer initialize in time"
LIST_TIMEOUT = "the server did not list its tools in time"
INITIALIZE_FAILED = "the server failed to initialize"
LIST_FAILED = "the server failed to list its tools"
SANDBOX_FAILED = "the sandbox could not start"
CONNECT_FAILED = "the server failed to connect"
CALL_FAILED = "the call failed in the gateway"

REDACTED = "[redacted]"
# Values shorter than this are not redacted: "1" or "on" would garble every log line.
MIN_SECRET_LENGTH = 4
# What an HTTP client leaves unencoded in a URL's query (httpx: printable ASCII but space,
# '"', '#', '<', '>').
_URL_KEPT = "".join(chr(i) for i in range(0x21, 0x7F) if chr(i) not in '"#<>')


class ClassifiedFailure(Exception):
    """A failure whose client-facing phrase is already known.

    `phrase` is safe to show a client (no stderr, no expanded values, no network detail);
    `detail` is for the operator's log only.
    """

    def __init__(self, phrase: str, detail: str = "") -> None:
        super().__init__(phrase)
        self.phrase = phrase
        self.detail = detail or phrase


@dataclass(frozen=True, slots=True)
class Incident:
    """What the client is told: the phrase, and the id that finds the log line."""

    phrase: str
    id: str


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


def new_incident_id() -> str:
    return secrets.token_hex(6)


def report(
    label: str,
    phrase: str,
    detail: str,
    *,
    stderr_tail: Iterable[str] = (),
    redact: Redactor | None = None,
    level: int = logging.WARNING,
) -> Incident:
    """Log the full story once, under a new incident id; return what the client may see."""
    incident = Incident(phrase, new_incident_id())
    clean = redact or Redactor()
    tail = " | ".join(clean(line) for line in stderr_tail if line)
    logger.log(
        level,
        "incident %s [%s] %s: %s%s",
        incident.id,
        label,
        phrase,
        clean(detail),
        f" (stderr tail: {tail})" if tail else "",
        extra={"incident": incident.id},  # its own field in LOG_FORMAT=json
    )
    return incident


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


def classify(
    exc: BaseException, *, remote: bool, phase: str, exit_code: int | None = None
) -> tuple[str, str]:
    """(phrase for the client, detail for the log) of a failure to connect.

    `phase` is what was under way: "start" (the transport), "initialize", "list".
    A remote server gets one phrase whatever went wrong, so that its URL tells a client
    nothing about the network behind it. A stdio server that exited says its exit code
    when it is known (a number tells a client nothing of the server's secrets).
    """
    leaf = first_leaf(exc)
    detail = f"{phase}: {type(leaf).__name__}: {leaf}"
    if isinstance(leaf, ClassifiedFailure):
        return leaf.phrase, f"{phase}: {leaf.detail}"
    if isinstance(leaf, ExpansionError):
        text = str(leaf)
        if text.startswith("command not found"):
            return COMMAND_NOT_FOUND, detail
        if text.startswith("working directory does not exist"):
            return CWD_MISSING, detail
        return text, detail  # names a variable and a field, never a value
    if remote:
        return UNREACHABLE, detail
    if isinstance(leaf, FileNotFoundError):
        return COMMAND_NOT_FOUND, detail
    if isinstance(leaf, OSError):
        return COMMAND_NOT_RUNNABLE, detail
    # Imported here: the settings import this module (the sandbox's policy), and a
    # manage.py command that connects nothing should not load the SDK.
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    closed = isinstance(leaf, anyio.EndOfStream | anyio.ClosedResourceError)
    if closed or (isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED):
        if exit_code is not None:
            return f"{EXITED_AT_START} (exit code {exit_code})", detail
        return EXITED_AT_START, detail
    if phase == "initialize":
        return INITIALIZE_FAILED, detail
    if phase == "list":
        return LIST_FAILED, detail
    return CONNECT_FAILED, detail


def first_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc
