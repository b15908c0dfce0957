"""Connection caps (per process and per tenant) and use_tool rate limits."""

import pytest
from asgiref.sync import sync_to_async

from mcp_gateway.metatools.ratelimit import Limit
from tests.harness.results import error_of, payload, text_of, use

pytestmark = pytest.mark.anyio


def two_server_toolbox(setup):
    """Toolbox `dev` with two fixture servers (sync: await it through sync_to_async)."""
    toolbox = setup.toolbox("dev")
    setup.fixture_server(toolbox, "a", position=0)
    setup.fixture_server(toolbox, "b", position=1)
    return toolbox


async def test_tenant_connection_cap(live_gateway, amake_setup):
    live_gateway.gateway.pool.tenant_max_connections = 1
    setup = await amake_setup()
    await sync_to_async(two_server_toolbox)(setup)
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert data["servers_connected"] == 1
    [line] = data["_errors"]
    assert line.endswith("this tenant's limit of 1 live server connections is reached")


async def test_a_tenants_own_cap_overrides_the_default(live_gateway, amake_setup):
    live_gateway.gateway.pool.tenant_max_connections = 1
    setup = await amake_setup()
    setup.tenant.max_connections = 2
    await setup.tenant.asave()
    await sync_to_async(two_server_toolbox)(setup)
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert data["servers_connected"] == 2


async def test_process_connection_cap(live_gateway, amake_setup):
    live_gateway.gateway.pool.max_connections = 1
    setup = await amake_setup()
    await sync_to_async(two_server_toolbox)(setup)
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    [line] = data["_errors"]
    assert "the gateway's limit of 1 live server connections is reached" in line


async def test_rate_limited_calls_get_a_clear_error_result(live_gateway, amake_setup):
    live_gateway.gateway.limiter.key = Limit(rate=0.01, burst=2)
    setup = await amake_setup()
    await setup.afixture_server(await setup.atoolbox("dev"), "fixture")
    call = use("dev", "fixture", "echo", {"text": "x"})
    async with live_gateway.session(setup.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        first = await session.call_tool("use_tool", call)
        second = await session.call_tool("use_tool", call)
        third = await session.call_tool("use_tool", call)
    assert text_of(first) == text_of(second) == "x"
    code, text = error_of(third)
    assert code == "RATE_LIMITED"
    assert text.startswith(
        "Error executing tool 'echo' in server 'fixture' (toolbox 'dev'): rate limit reached; "
        "retry in "
    )
    assert third.structured_content["error"]["details"]["retry_after"] > 0
