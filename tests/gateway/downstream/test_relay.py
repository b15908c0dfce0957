"""What a downstream server says besides a result, at one connection (issue 34): its log
messages (to the gateway's log, to the one call in flight, bounded per connection), its
`list_changed` (listed again, `tools_version` bumped) and the client's request `_meta`."""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import replace
from functools import partial

import anyio
import mcp_types as types
import pytest

from mcp_gateway.downstream.connection import Connection, passed_on_meta
from mcp_gateway.downstream.failures import DownstreamFailure
from mcp_gateway.downstream.notifications import BURST, Notifications, TokenBucket
from mcp_gateway.observe import metrics
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef, fingerprint
from tests.harness.paths import RELAY_PROBE

pytestmark = pytest.mark.anyio


def probe() -> ServerConfig:
    server = ServerConfig("probe", "stdio", command=sys.executable, args=(RELAY_PROBE,))
    return replace(server, fingerprint=fingerprint(server))


REF = ServerRef("acme", "dev", "probe")


def test_the_bucket_gives_its_burst_then_its_rate() -> None:
    bucket = TokenBucket(10.0, 3)
    now = bucket.stamp
    assert [bucket.take(now) for _ in range(4)] == [True, True, True, False]
    assert bucket.take(now + 0.11)  # one token a tenth of a second
    assert not bucket.take(now + 0.11)


def test_the_reserved_keys_and_the_progress_token_are_not_passed_on() -> None:
    meta = {
        "progress_token": 7,
        "io.modelcontextprotocol/logLevel": "info",
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "tracestate": "vendor=1",
        "acme/request": {"n": 1},
    }
    assert passed_on_meta(meta) == {
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "tracestate": "vendor=1",
        "acme/request": {"n": 1},
    }
    assert passed_on_meta({"progress_token": 1}) is None
    assert passed_on_meta(None) is None


async def test_log_messages_reach_the_log_and_the_one_call_in_flight(caplog) -> None:
    conn = Connection(probe(), REF, 30, max_result_bytes=1 << 20)
    received: list[tuple[str, object]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append((params.level, params.data))

    caplog.set_level(logging.DEBUG, logger="workbench.downstream.log")
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await conn.wait_ready()
        result = await conn.call_tool("log", {}, on_log=on_log)
        unheard = await conn.call_tool("log", {"levels": ["error"]})
        conn.stop()
    assert result.content[0].text == "logged"  # type: ignore[union-attr]
    assert unheard.content[0].text == "logged"  # type: ignore[union-attr]
    assert received == [
        ("debug", "debug message"),
        ("info", "info message"),
        ("warning", "warning message"),
        ("error", "error message"),
    ]
    lines = [
        (r.levelname, r.getMessage(), r.tenant, r.server, r.mcp_level)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "workbench.downstream.log"
    ]
    assert lines == [
        ("DEBUG", "[acme/dev/probe] probe debug: debug message", "acme", "probe", "debug"),
        ("INFO", "[acme/dev/probe] probe info: info message", "acme", "probe", "info"),
        ("WARNING", "[acme/dev/probe] probe warning: warning message", "acme", "probe", "warning"),
        ("ERROR", "[acme/dev/probe] probe error: error message", "acme", "probe", "error"),
        ("ERROR", "[acme/dev/probe] probe error: error message", "acme", "probe", "error"),
    ]


async def test_a_log_message_with_two_calls_in_flight_goes_to_neither(caplog) -> None:
    """Whose it is cannot be told (a stdio session carries no tie to the call): the
    gateway's log has it, no client."""
    conn = Connection(probe(), REF, 60, max_result_bytes=1 << 20)
    received: list[object] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params.data)

    caplog.set_level(logging.INFO, logger="workbench.downstream.log")
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await conn.wait_ready()
        async with anyio.create_task_group() as calls:
            calls.start_soon(partial(conn.call_tool, "wait", {"seconds": 60}, on_log=on_log))
            with anyio.fail_after(30):  # a bounded wait for the first call to be sent
                while conn.in_flight < 1:
                    await anyio.sleep(0.01)
            await conn.call_tool("log", {"levels": ["error"]}, on_log=on_log)
            calls.cancel_scope.cancel()
        conn.stop()
    assert received == []
    assert [r.getMessage() for r in caplog.records if r.name == "workbench.downstream.log"] == [
        "[acme/dev/probe] probe error: error message"
    ]


async def test_a_json_rpc_error_keeps_its_code_and_data() -> None:
    conn = Connection(probe(), REF, 30, max_result_bytes=1 << 20)
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await conn.wait_ready()
        with pytest.raises(DownstreamFailure) as caught:
            await conn.call_tool("refuse", {})
        conn.stop()
    assert caught.value.reason == "Client did not declare the form elicitation capability"
    assert caught.value.error is not None
    assert (caught.value.error.code, caught.value.error.data) == (
        -32021,
        {"capability": "elicitation", "mode": "form"},
    )


async def test_list_changed_lists_again_before_the_call_answers() -> None:
    conn = Connection(probe(), REF, 30, max_result_bytes=1 << 20)
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await conn.wait_ready()
        assert not conn.has_tool("added") and conn.tools_version == 0
        await conn.call_tool("add_tool", {})
        assert conn.has_tool("added") and conn.tools_version == 1
        assert [tool.name for tool in conn.tools][-1] == "added"
        assert conn.digests.keys() == {item["name"] for item in conn.definitions}
        answer = await conn.call_tool("added", {})
        conn.stop()
    assert answer.content[0].text == "added here"  # type: ignore[union-attr]


async def test_a_flood_is_cut_to_the_rate_and_counted(caplog) -> None:
    """100,000 notifications in one call: at most the bucket's burst (and its rate while
    they come) are kept; the rest are dropped before the SDK sees them, counted, and the
    operator told once at the start and once at the end of the burst."""
    count = 100_000
    conn = Connection(probe(), REF, 60, max_result_bytes=1 << 20)
    dropped = metrics.metrics().notifications_dropped.labels(*REF)
    before = dropped._value.get()
    caplog.set_level(logging.WARNING, logger="workbench.downstream")
    async with anyio.create_task_group() as group:
        group.start_soon(conn.run)
        await conn.wait_ready()
        started, cpu = time.perf_counter(), time.process_time()
        result = await conn.call_tool("flood", {"count": count})
        elapsed, cpu_used = time.perf_counter() - started, time.process_time() - cpu
        echo = await conn.call_tool("log", {"levels": ["info"]})  # after the burst
        conn.stop()
    assert result.content[0].text == f"flooded {count}"  # type: ignore[union-attr]
    assert echo.content[0].text == "logged"  # type: ignore[union-attr]
    kept = count - conn.notifications.dropped_total
    assert BURST <= kept < count // 2
    assert dropped._value.get() - before == conn.notifications.dropped_total
    told = [r.getMessage() for r in caplog.records if "dropp" in r.getMessage()]
    assert told[0].startswith("[acme/dev/probe] the server sends notifications faster than")
    total = conn.notifications.dropped_total
    assert told[1] == f"[acme/dev/probe] {total} notifications dropped (over the rate)"
    print(f"flood of {count}: {elapsed:.2f}s wall, {cpu_used:.2f}s CPU, {kept} kept")


def test_notifications_other_than_logs_pass_on_within_the_rate() -> None:
    from mcp.shared.message import SessionMessage

    changed: list[int] = []
    gate = Notifications(
        "t/b/s",
        "t",
        "s",
        lambda: None,
        lambda: None,
        lambda: changed.append(1),
        lambda n: None,  # type: ignore[arg-type,return-value]
        rate=0.0001,
        burst=1,
    )
    progress = SessionMessage(
        types.JSONRPCNotification(
            jsonrpc="2.0",
            method="notifications/progress",
            params={"progressToken": 1, "progress": 1},
        )
    )
    changed_note = SessionMessage(
        types.JSONRPCNotification(jsonrpc="2.0", method="notifications/tools/list_changed")
    )
    assert gate.admit(progress) is True
    assert gate.admit(progress) is False  # over the rate
    assert gate.admit(changed_note) is False and changed == [1]  # never dropped, handled
    assert gate.dropped_total == 1
