"""What the front door learns of a request before the SDK sees it, typed, in one entry of
the ASGI scope's state: the caller, its session, and the session id an `initialize` gets."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

from mcp_gateway.snapshots.callers import Caller

_KEY = "workbench"


@dataclass(slots=True)
class RequestState:
    caller: Caller
    session_id: str | None = None  # the request's Mcp-Session-Id (2025-11-25 clients)
    new_session_id: str | None = None  # given to this `initialize`, when it is one
    # The session's client declared URL elicitation at its `initialize` (2025-11-25): a
    # sign-in it needs may come to it as one (`front.server`).
    url_elicitation: bool = False
    # A tools/call of a session whose client declared elicitation, sampling or roots at its
    # `initialize` (2025-11-25; wire form, `downstream.envelope.relayed`): served as a
    # stream, on which a server's question may reach the client (`front.questions`).
    capabilities: dict[str, Any] | None = None

    def put(self, scope: MutableMapping[str, Any]) -> None:
        scope.setdefault("state", {})[_KEY] = self

    @staticmethod
    def of(scope: dict[str, Any]) -> RequestState | None:
        state: RequestState | None = scope.get("state", {}).get(_KEY)
        return state

    @property
    def owner(self) -> tuple[int, str] | None:
        """Whose calls a cancellation may reach: the key's, in this session."""
        return (self.caller.key.key_id, self.session_id) if self.session_id else None
