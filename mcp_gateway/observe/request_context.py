"""The MCP request this task serves: who and which session, for the call log and the JSON
log lines (`observe.logs`). Set around each request by the front door's middleware."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(slots=True)
class RequestInfo:
    session_id: str | None = None
    client_name: str = ""
    client_version: str = ""
    request_id: str = ""
    tenant: str = ""


current: ContextVar[RequestInfo | None] = ContextVar("workbench_request", default=None)


def current_request() -> RequestInfo | None:
    """The MCP request this task serves, if any."""
    return current.get()
