"""Connection caps (per process and per tenant) and rate limits (the gateway's, a key's own)."""

import pytest
from asgiref.sync import sync_to_async

from mcp_gateway.metatools.ratelimit import Limit, LocalBuckets
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


async def test_a_keys_own_limit_refuses_it_and_not_its_tenants_other_keys(
    live_gateway, amake_setup
):
    """An admin's limit for one key reaches the running gateway (the tenant's version moves
    on save): that key is refused past its own burst, another key of its tenant is not."""
    limiter = live_gateway.gateway.limiter
    shared, limiter.buckets = limiter.buckets, LocalBuckets(clock=lambda: 0.0)  # exact waits
    limiter.tenant, limiter.key = Limit(rate=100, burst=100), Limit(rate=100, burst=100)
    setup = await amake_setup()
    await setup.afixture_server(await setup.atoolbox("dev"), "fixture")
    other = await sync_to_async(setup.new_key)()
    call = use("dev", "fixture", "echo", {"text": "x"})
    async with (
        live_gateway.session(setup.key) as limited,
        live_gateway.session(other.key) as free,
    ):
        for session in (limited, free):
            payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            assert text_of(await session.call_tool("use_tool", call)) == "x"
        setup.api_key.rate_limit, setup.api_key.rate_burst = 0.01, 1
        await setup.api_key.asave()
        first = await limited.call_tool("use_tool", call)
        refused = await limited.call_tool("use_tool", call)
        others = [await free.call_tool("use_tool", call) for _ in range(3)]
    await shared.close()
    assert text_of(first) == "x"
    assert error_of(refused) == (
        "RATE_LIMITED",
        "Error executing tool 'echo' in server 'fixture' (toolbox 'dev'): rate limit reached; "
        "retry in 100.00s",
    )
    assert refused.structured_content["error"]["details"]["retry_after"] == 100.0
    assert [text_of(result) for result in others] == ["x", "x", "x"]


async def test_a_keys_own_open_limit(live_gateway, amake_setup):
    limiter = live_gateway.gateway.limiter
    shared, limiter.buckets = limiter.buckets, LocalBuckets(clock=lambda: 0.0)
    limiter.open_tenant = limiter.open_key = Limit(rate=100, burst=100)
    setup = await amake_setup(open_rate_limit=0.5, open_rate_burst=1)
    await setup.atoolbox("dev")
    other = await sync_to_async(setup.new_key)()
    async with live_gateway.session(setup.key) as limited, live_gateway.session(other.key) as free:
        payload(await limited.call_tool("open_toolbox", {"toolbox": "dev"}))
        refused = await limited.call_tool("open_toolbox", {"toolbox": "dev"})
        payload(await free.call_tool("open_toolbox", {"toolbox": "dev"}))
        payload(await free.call_tool("open_toolbox", {"toolbox": "dev"}))
    await shared.close()
    assert error_of(refused) == (
        "RATE_LIMITED",
        "Error opening toolbox 'dev': rate limit reached; retry in 2.00s",
    )
