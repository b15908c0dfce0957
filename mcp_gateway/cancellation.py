"""Calls in flight in this process, so that a client's `notifications/cancelled` reaches them.

Served statelessly, a 2025-11-25 client's cancellation arrives as a POST of its own, apart
from the call it names; the SDK cannot tie the two together, so the gateway does, by the
caller's key, its session id and the request id. Another key or session naming the same
request id finds nothing. (A 2026-07-28 client cancels by closing the call's response
stream, which the SDK turns into a cancellation of the handler by itself.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio

Owner = tuple[int, str]  # (API key id, session id)


class InFlightCalls:
    def __init__(self) -> None:
        self._scopes: dict[tuple[Owner, Any], anyio.CancelScope] = {}

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
