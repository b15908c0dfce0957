"""One downstream connection, owned by its task: connect, list, call, stop; a failure to
connect is classified, never raised; a closed session refuses calls."""

from __future__ import annotations

import anyio
import pytest

from kernel.pins import definition, digest
from mcp_gateway.downstream.connection import Connection
from mcp_gateway.downstream.failures import DownstreamFailure
from mcp_gateway.observe import metrics
from tests.gateway.downstream.servers import fixture_server, ref

pytestmark = pytest.mark.anyio


async def test_a_connection_lists_once_and_calls_on_its_session():
    server = fixture_server()
    conn = Connection(server, ref(server), 30, max_result_bytes=1 << 20)
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await conn.wait_ready()
        assert conn.alive and conn.error is None
        assert conn.label == "acme/dev/fixture"
        assert conn.has_tool("echo") and not conn.has_tool("nope")
        # Each tool's definition and digest, made once at connect.
        assert conn.definitions == [definition(tool) for tool in conn.tools]
        assert conn.digests == {item["name"]: digest(item) for item in conn.definitions}
        result = await conn.call_tool("echo", {"text": "hi"})
        assert [item.text for item in result.content] == ["hi"]
        assert conn.in_flight == 0
        conn.stop()
    assert conn.closed and not conn.alive


async def test_a_server_that_exits_at_start_is_a_classified_failure():
    server = fixture_server("broken", "--exit-at-start")
    before = metrics.metrics().start_failures.labels(*ref(server))._value.get()
    conn = Connection(server, ref(server), 30, max_result_bytes=1 << 20)
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await conn.wait_ready()
    assert conn.error is not None and conn.error.startswith("the server exited during start-up")
    assert conn.incident  # the log line with the full story
    assert conn.health.failures == 1
    after = metrics.metrics().start_failures.labels(*ref(server))._value.get()
    assert after == before + 1  # counted under the server's own labels


async def test_a_closed_connection_refuses_calls():
    server = fixture_server()
    conn = Connection(server, ref(server), 30, max_result_bytes=1 << 20)
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        conn.stop()  # before it is ready: it connects, then closes at once
    assert conn.closed
    with pytest.raises(DownstreamFailure, match="closed"):
        await conn.call_tool("echo", {"text": "hi"})
