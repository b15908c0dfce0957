"""A client's cancellation of one of its calls, in one place.

Served statelessly, a 2025-11-25 client's `notifications/cancelled` arrives as a POST of its
own, apart from the call it names; the SDK cannot tie the two together, so the front door
does, by the caller's key, its session id and the request id, before the SDK sees the
notification (the SDK still answers it: 202). Another key or session naming the same
request id finds nothing. (A 2026-07-28 client cancels by closing the call's response
stream, which the SDK turns into a cancellation of the handler by itself.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from mcp_gateway.front.request_state import RequestState

Owner = tuple[int, str]  # (API key id, session id)
CANCELLED = b"notifications/cancelled"


def cancelled_request(body: bytes) -> Any:
    """The request id a `notifications/cancelled` names, or None."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != CANCELLED.decode():
        return None
    params = message.get("params")
    return params.get("requestId") if isinstance(params, dict) else None


class InFlightCalls:
    """Calls in flight in this process, findable by their owner and request id."""

    def __init__(self) -> None:
        self._scopes: dict[tuple[Owner | None, Any], anyio.CancelScope] = {}

    @contextmanager
    def track(self, owner: Owner | None, request_id: Any) -> Iterator[anyio.CancelScope]:
        """A cancel scope for one call, findable by `cancel` while the call runs."""
        with anyio.CancelScope() as scope:
            entry = (owner, request_id)
            if owner is None or request_id is None or entry in self._scopes:
                yield scope
                return
            self._scopes[entry] = scope
            try:
                yield scope
            finally:
                if self._scopes.get(entry) is scope:
                    del self._scopes[entry]

    def cancel(self, owner: Owner, request_id: Any) -> bool:
        scope = self._scopes.get((owner, request_id))
        if scope is None:
            return False
        scope.cancel()
        return True

    def apply(self, state: RequestState, body: bytes) -> bool:
        """Cancel the call a `notifications/cancelled` body names, if this caller's session
        has it in flight here."""
        if CANCELLED not in body:
            return False
        request_id = cancelled_request(body)
        if request_id is None or state.owner is None:
            return False
        return self.cancel(state.owner, request_id)
