"""A client's `notifications/cancelled` reaches the call it names: only its own key's, in
its own session."""

from __future__ import annotations

import json

import anyio
import pytest

from mcp_gateway.front.cancellation import InFlightCalls, cancelled_request
from mcp_gateway.front.request_state import RequestState
from mcp_gateway.snapshots.callers import Caller, KeyRecord
from mcp_gateway.snapshots.servers import TenantConfig

pytestmark = pytest.mark.anyio

TENANT = TenantConfig(1, "acme", True, 1, ())


def state(key_id: int, session: str | None) -> RequestState:
    key = KeyRecord(key_id, f"k{key_id}", "", 1, False, None, None, 1)
    return RequestState(Caller(key, TENANT), session)


def note(request_id: object) -> bytes:
    params = {"requestId": request_id}
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})


@pytest.mark.parametrize(
    ("body", "found"),
    [(note(7).encode(), 7), (note("a").encode(), "a"), (b"{", None), (b'{"method": "x"}', None)],
)
def test_the_request_a_notification_names(body, found):
    assert cancelled_request(body) == found


async def test_only_the_callers_own_session_reaches_its_call():
    calls = InFlightCalls()
    mine = state(1, "s1")
    with calls.track(mine.owner, 7) as scope:
        assert not calls.apply(state(2, "s1"), note(7).encode())  # another key
        assert not calls.apply(state(1, "s2"), note(7).encode())  # another session
        assert not calls.apply(state(1, None), note(7).encode())  # no session
        assert calls.apply(mine, note(7).encode())
        await anyio.sleep(1)  # cancelled here
    assert scope.cancelled_caught
    assert not calls.apply(mine, note(7).encode())  # gone once it ended
