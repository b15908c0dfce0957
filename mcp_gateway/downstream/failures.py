"""Why a downstream failed, in two voices: a short classified phrase for the client, and
the full reason for the operator's log, joined by an incident id. A failed connect also
keeps its story (`Story`: the detail and the stderr tail, redacted) for the admin's cause
(`causes`), recorded with the server's last check; never for a client.

The client's phrase never holds downstream stderr, expanded `${VAR}` values or raw
network errors: a remote URL must not become a port scanner, nor a server's stderr a way
to read what it was given. Everything goes to ONE log line, with the incident id, the
full reason and the tail of stderr, with the server's secret values redacted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from kernel.classified import ClassifiedFailure
from kernel.egress import UNREACHABLE
from kernel.incidents import new_incident_id
from kernel.redaction import Redactor
from mcp_gateway.downstream.envrefs import ExpansionError

if TYPE_CHECKING:
    import mcp_types as types

logger = logging.getLogger("workbench.incident")

# Phrases a client may see (the spec's examples, and the gateway's own; a remote server's,
# UNREACHABLE, is the egress policy's: kernel.egress).
COMMAND_NOT_FOUND = "the command was not found"
COMMAND_NOT_RUNNABLE = "the command could not be run"
CWD_MISSING = "the working directory does not exist"
EXITED_AT_START = "the server exited during start-up"
START_TIMEOUT = "the server did not answer initialize in time"
LIST_TIMEOUT = "the server did not list its tools in time"
INITIALIZE_FAILED = "the server failed to initialize"
LIST_FAILED = "the server failed to list its tools"
SANDBOX_FAILED = "the sandbox could not start"
CONNECT_FAILED = "the server failed to connect"
CALL_FAILED = "the call failed in the gateway"


class DownstreamFailure(Exception):
    """A downstream call failed; `timed_out` tells TIMEOUT from DOWNSTREAM_ERROR, and
    `incident` names the log line of a failure the gateway describes (None for the
    server's own JSON-RPC error, which is the tool's answer). `error`: that JSON-RPC error
    (its code and data), when the server answered with one."""

    def __init__(
        self,
        reason: str,
        *,
        timed_out: bool = False,
        incident: str | None = None,
        error: types.ErrorData | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.timed_out = timed_out
        self.incident = incident
        self.error = error


@dataclass(frozen=True, slots=True)
class Incident:
    """What the client is told: the phrase, and the id that finds the log line."""

    phrase: str
    id: str


@dataclass(frozen=True, slots=True)
class Story:
    """A failed connect as the admin may read it: the client's phrase and incident, the
    log's detail and the stderr tail (the server's secret values redacted), and the
    failure itself (its type tells an egress refusal, say)."""

    phrase: str
    incident: str
    detail: str
    stderr_tail: tuple[str, ...] = ()
    error: BaseException | None = field(default=None, compare=False, repr=False)


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
    # Imported here: the settings and the admin import this module (the sandbox's paths), and a
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
