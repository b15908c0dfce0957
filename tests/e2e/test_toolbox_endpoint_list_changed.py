"""`list_changed` on the toolbox endpoint: a server's own `notifications/tools/list_changed`
(relay_probe's `add_tool`) reaches a 2026-07-28 client on its `subscriptions/listen`
stream, once the gateway has listed the server again; a shutdown ends such streams
gracefully; the capabilities say so truthfully (`tools.listChanged` on both generations,
2025-11-25's on its GET stream: test_toolbox_endpoint_get_stream; never for resources or
prompts, whose changes are not relayed)."""

from __future__ import annotations

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import INTERNAL_ERROR

from tests.harness.live import TenantSetup, add_relay_probe
from tests.harness.toolbox_world import add_everything, endpoint, needs_node

pytestmark = [pytest.mark.anyio]

WAIT_SECONDS = 60  # the relisting and the stream's frame, on a loaded machine


@pytest.fixture
def probed(make_setup) -> TenantSetup:
    setup = make_setup()
    add_relay_probe(setup.toolbox("dev"), pinning="off")
    return setup


async def test_a_tool_added_at_run_time_is_announced_on_a_listen_stream(live_gateway, probed):
    dev = endpoint(live_gateway, "acme", "dev")
    async with dev.client(probed.key) as client:
        tools = client.server_capabilities.tools
        assert tools is not None and tools.list_changed is True
        before = [tool.name for tool in (await client.list_tools()).tools]
        async with client.listen(tools_list_changed=True) as stream:
            assert stream.honored.tools_list_changed is True
            added = await client.call_tool("probe__add_tool", {})
            assert not added.is_error
            with anyio.fail_after(WAIT_SECONDS):
                event = await anext(stream)
        after = [tool.name for tool in (await client.list_tools()).tools]
    assert isinstance(event, ToolsListChanged)
    assert "probe__added" not in before
    assert after == [*before, "probe__added"]


async def test_a_shutdown_ends_the_streams_gracefully(live_gateway, probed):
    """What the process does as it starts to stop (`drain.install`'s `ending`, on SIGINT or
    a drained SIGTERM): its listen streams end with their result, so that uvicorn, which
    waits for every open response, is not held by them; the client's loop just ends."""
    dev = endpoint(live_gateway, "acme", "dev")
    assert live_gateway.loop is not None
    async with dev.client(probed.key) as client:
        async with client.listen(tools_list_changed=True) as stream:
            live_gateway.loop.call_soon_threadsafe(live_gateway.app.gateway.end_streams)
            with anyio.fail_after(WAIT_SECONDS):
                events = [event async for event in stream]  # SubscriptionLost if dropped
        tools = [tool.name for tool in (await client.list_tools()).tools]
    assert events == []
    assert "probe__add_tool" in tools  # the endpoint serves on


async def test_a_listen_past_the_process_limit_is_refused(live_gateway, probed):
    entry = live_gateway.gateway.toolbox_endpoint.server.get_request_handler("subscriptions/listen")
    entry.handler.limit = 1  # this gateway's own (1024 otherwise)
    dev = endpoint(live_gateway, "acme", "dev")
    async with dev.client(probed.key) as client, client.listen(tools_list_changed=True):
        with pytest.raises(MCPError) as refused:
            async with client.listen(tools_list_changed=True):
                pass
    assert refused.value.error.code == INTERNAL_ERROR
    assert refused.value.error.message == "Subscription limit reached"


async def test_a_listen_past_the_tenant_limit_is_refused(live_gateway, probed):
    """One tenant's streams are bounded below the process's: its next listen is refused."""
    entry = live_gateway.gateway.toolbox_endpoint.server.get_request_handler("subscriptions/listen")
    entry.handler.tenant_limit = 1  # this gateway's own (256 otherwise)
    dev = endpoint(live_gateway, "acme", "dev")
    async with dev.client(probed.key) as client, client.listen(tools_list_changed=True):
        with pytest.raises(MCPError) as refused:
            async with client.listen(tools_list_changed=True):
                pass
        assert entry.handler.streams == 1  # the refused one took no place
    assert refused.value.error.code == INTERNAL_ERROR
    assert refused.value.error.message == "Subscription limit reached"


@pytest.fixture
def everything(make_setup) -> TenantSetup:
    setup = make_setup()
    add_everything(setup.toolbox("dev"))
    return setup


@needs_node
@pytest.mark.parametrize("generation", ["2025-11-25", "2026-07-28"])
async def test_resources_and_prompts_changes_are_not_claimed(live_gateway, everything, generation):
    setup = everything
    dev = endpoint(live_gateway, "acme", "dev")
    if generation == "2025-11-25":
        async with dev.session(setup.key) as session:
            capabilities = session.server_capabilities
    else:
        async with dev.client(setup.key) as client:
            capabilities = client.server_capabilities
    assert capabilities is not None
    assert capabilities.resources is not None and capabilities.prompts is not None
    assert not capabilities.resources.list_changed
    assert not capabilities.resources.subscribe
    assert not capabilities.prompts.list_changed
