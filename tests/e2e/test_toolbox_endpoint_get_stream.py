"""`list_changed` on the toolbox endpoint to 2025-11-25 clients, on the stream they open by
GET: a server's own `notifications/tools/list_changed` (relay_probe's `add_tool`) reaches
the Python SDK's client and the TypeScript SDK's once the gateway has listed the server
again; the GET is checked as a POST is (the one 404), shares the listen streams' limit,
and ends as the gateway stops. The 2026-07-28 version: test_toolbox_endpoint_list_changed."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import mcp_types as types
import pytest
from anyio.streams.memory import MemoryObjectSendStream
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.test_toolbox_endpoint_clients import run
from tests.harness.live import LiveGateway, TenantSetup, add_relay_probe, start_gateway
from tests.harness.paths import ROOT
from tests.harness.results import refusal_json
from tests.harness.toolbox_world import endpoint, needs_node

pytestmark = [pytest.mark.anyio]

WAIT_SECONDS = 60  # the servers' start, the relisting and the stream's frame, under load
TS_CLIENT = ROOT / "tests" / "clients" / "ts_sdk_list_changed.mjs"
NOT_FOUND = refusal_json(
    404, "not_found", "There is no MCP endpoint at this path for this credential."
)
TOO_MANY_FOR_THE_TENANT = refusal_json(
    503,
    "too_many_streams",
    "This tenant has 1 streams open on this gateway process, its limit: this one is "
    "refused. Requests by POST are served as usual; list the tools again to see a change.",
)
TOO_MANY = refusal_json(
    503,
    "too_many_streams",
    "This gateway process has 1 streams open, its limit: this one is refused. "
    "Requests by POST are served as usual; list the tools again to see a change.",
)
STREAM_HEADERS = {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


@pytest.fixture
def probed(make_setup) -> TenantSetup:
    setup = make_setup()
    add_relay_probe(setup.toolbox("dev"), pinning="off")
    return setup


@asynccontextmanager
async def session_with_stream(
    gateway: LiveGateway, key: str, told: MemoryObjectSendStream[types.ServerNotification]
) -> AsyncIterator[tuple[ClientSession, anyio.Event]]:
    """A 2025-11-25 session (as `LiveGateway.session`) whose notifications go to `told`,
    and an event set once its GET stream is open (its answer's headers have come)."""
    opened = anyio.Event()

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method == "GET" and response.status_code == 200:
            opened.set()

    async def message_handler(message: types.ServerNotification | Exception) -> None:
        if not isinstance(message, Exception):
            told.send_nowait(message)

    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
            event_hooks={"response": [on_response]},
        ) as http,
        streamable_http_client(gateway.url, http_client=http) as (read, write, *_),
        ClientSession(read, write, message_handler=message_handler) as session,
    ):
        await session.initialize()
        yield session, opened


async def test_a_2025_client_is_told_on_its_get_stream(live_gateway, probed):
    dev = endpoint(live_gateway, "acme", "dev")
    told, heard = anyio.create_memory_object_stream[types.ServerNotification](8)
    async with session_with_stream(dev, probed.key, told) as (session, opened):
        tools = session.server_capabilities.tools
        assert tools is not None and tools.list_changed is True
        before = [tool.name for tool in (await session.list_tools()).tools]
        with anyio.fail_after(WAIT_SECONDS):
            await opened.wait()
        added = await session.call_tool("probe__add_tool", {})
        assert not added.is_error
        with anyio.fail_after(WAIT_SECONDS):
            notification = await heard.receive()
        after = [tool.name for tool in (await session.list_tools()).tools]
    assert isinstance(notification, types.ToolListChangedNotification)
    assert "probe__added" not in before
    assert after == [*before, "probe__added"]


@needs_node
async def test_the_typescript_sdks_client_is_told_on_its_get_stream(live_gateway, probed):
    dev = endpoint(live_gateway, "acme", "dev")
    node = shutil.which("node") or "node"
    seen = await run(
        node, str(TS_CLIENT), dev.url, "probe__add_tool", env={"WORKBENCH_KEY": probed.key}
    )
    assert seen["protocolVersion"] == "2025-11-25"
    assert seen["listChanged"] is True
    assert seen["streamStatus"] == 200
    assert seen["added"] == {"content": [{"type": "text", "text": "added"}], "isError": False}
    assert seen["notification"] == "notifications/tools/list_changed"
    assert "probe__added" not in seen["before"]
    assert seen["after"] == [*seen["before"], "probe__added"]


@pytest.fixture
def ops_only(probed) -> TenantSetup:
    """A key of acme's that may open `ops` only."""
    return probed.new_key(toolboxes=[probed.toolbox("ops")])


async def test_a_get_of_a_toolbox_the_key_may_not_open_is_the_404(live_gateway, ops_only):
    async with httpx2.AsyncClient(timeout=30) as http:
        refused = await http.get(
            endpoint(live_gateway, "acme", "dev").url,
            headers={"Authorization": f"Bearer {ops_only.key}", **STREAM_HEADERS},
        )
    assert refused.status_code == 404
    assert refused.json() == NOT_FOUND


async def test_a_2026_get_is_still_the_405(live_gateway, probed):
    """2026-07-28 has no such stream: its clients listen by POST."""
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.get(
            endpoint(live_gateway, "acme", "dev").url,
            headers={
                "Authorization": f"Bearer {probed.key}",
                **STREAM_HEADERS,
                "MCP-Protocol-Version": "2026-07-28",
            },
        )
    assert response.status_code == 405
    assert response.json()["error"]["data"]["reason"] == "method_not_allowed"


@pytest.mark.parametrize(
    ("limit", "refusal"),
    [("limit", TOO_MANY), ("tenant_limit", TOO_MANY_FOR_THE_TENANT)],
    ids=["the process's", "the tenant's"],
)
async def test_a_get_past_a_limit_is_refused(live_gateway, probed, limit, refusal):
    """One limit for both kinds of stream: a listen stream open, a GET past it refused.
    The process's (1024 otherwise) and a tenant's own, below it (256), each its own text."""
    changes = live_gateway.gateway.toolbox_endpoint.changes
    setattr(changes, limit, 1)  # this gateway's own
    dev = endpoint(live_gateway, "acme", "dev")
    async with (
        dev.client(probed.key) as client,
        client.listen(tools_list_changed=True),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        refused = await http.get(
            dev.url, headers={"Authorization": f"Bearer {probed.key}", **STREAM_HEADERS}
        )
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "30"
    assert refused.json() == refusal


async def test_the_gateways_stop_ends_the_stream(probed):
    """As the process does on SIGINT (`RunningGateway.stop` ends the streams first): the
    stream's body ends, and uvicorn, which waits for every open response, stops."""
    running = start_gateway()
    try:
        dev = endpoint(running.live, "acme", "dev")
        async with (
            httpx2.AsyncClient(timeout=WAIT_SECONDS) as http,
            http.stream(
                "GET", dev.url, headers={"Authorization": f"Bearer {probed.key}", **STREAM_HEADERS}
            ) as stream,
        ):
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            with anyio.fail_after(WAIT_SECONDS):
                async with anyio.create_task_group() as group:
                    group.start_soon(anyio.to_thread.run_sync, running.stop)
                    body = b"".join([chunk async for chunk in stream.aiter_bytes()])
    finally:
        if running.thread.is_alive():
            running.stop()
    assert b"event: message" not in body  # ended, nothing to tell
    assert not running.thread.is_alive()
