"""A call's own connection (`metatools.lone_calls`) past its bound: the call shares the
pool's connection, and the operator is told (a log line and the bound's metric), since a
question the server asks during it with another call in flight is refused."""

from __future__ import annotations

import logging
import sys

import pytest

from mcp_gateway.downstream.connection import Connection
from mcp_gateway.downstream.pool import Pool
from mcp_gateway.metatools.lone_calls import LoneCalls
from mcp_gateway.observe.metrics import metrics
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef
from tests.harness.paths import RELAY_PROBE

pytestmark = pytest.mark.anyio

REF = ServerRef("acme", "dev", "probe")
SERVER = ServerConfig("probe", "stdio", command=sys.executable, args=(RELAY_PROBE,))


def pool() -> Pool:
    return Pool(
        connect_timeout=30,
        idle_seconds=600,
        max_result_bytes=1 << 20,
        max_connections=10,
        tenant_max_connections=10,
    )


async def test_past_the_bound_a_call_shares_the_pools_connection_and_the_operator_is_told(
    caplog,
):
    caplog.set_level(logging.WARNING, logger="workbench.relay")
    lone = LoneCalls(pool(), limit=1)
    shared = Connection(SERVER, REF, 60, max_result_bytes=1 << 20)  # 2025-11-25: not modern
    shared.in_flight = 1  # the pool's connection has a call in flight
    reached = metrics().relay_bounds.labels(*REF, "lone_connections")
    before = reached._value.get()
    assert lone.needed(shared, SERVER, can_ask=True)
    assert caplog.messages == [] and reached._value.get() == before
    async with lone.limit:  # the one connection of a call's own, in use
        assert not lone.needed(shared, SERVER, can_ask=True)
    assert reached._value.get() == before + 1
    assert caplog.messages == [
        "[acme/dev/probe] a call shares the pool's connection: the connections of a call's own "
        "in this process are at their bound, 1 (a question asked with another call in flight "
        "is refused)"
    ]
