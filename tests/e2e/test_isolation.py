"""Tenants never see each other: toolboxes, connections, sessions, open state."""

import uuid

import httpx2
import pytest

from tests.harness.procs import processes_with
from tests.harness.results import INITIALIZE_PARAMS, error_of, payload, raw_rpc, text_of, use

pytestmark = pytest.mark.anyio


@pytest.fixture
def two_tenants(make_setup):
    acme, beta = make_setup("acme"), make_setup("beta")
    for setup, prefix in ((acme, "ACME:"), (beta, "BETA:")):
        setup.fixture_server(setup.toolbox("dev"), "fixture", "--prefix", prefix)
    return acme, beta


async def test_same_toolbox_name_in_two_tenants(live_gateway, two_tenants):
    acme, beta = two_tenants
    async with live_gateway.session(acme.key) as a, live_gateway.session(beta.key) as b:
        payload(await a.call_tool("open_toolbox", {"toolbox": "dev"}))
        payload(await b.call_tool("open_toolbox", {"toolbox": "dev"}))
        from_a = await a.call_tool("use_tool", use("dev", "fixture", "echo", {"text": "x"}))
        from_b = await b.call_tool("use_tool", use("dev", "fixture", "echo", {"text": "x"}))
    assert (text_of(from_a), text_of(from_b)) == ("ACME:x", "BETA:x")
    assert len(live_gateway.gateway.pool.connections()) == 2


async def test_other_tenants_toolboxes_are_not_found(live_gateway, amake_setup):
    acme, beta = await amake_setup("acme"), await amake_setup("beta")
    await acme.atoolbox("dev")
    await beta.atoolbox("secret")
    async with live_gateway.session(acme.key) as session:
        result = await session.call_tool("open_toolbox", {"toolbox": "secret"})
    assert error_of(result) == (
        "TOOLBOX_NOT_FOUND",
        "Error: Toolbox 'secret' not found. Available toolboxes: dev",
    )


async def test_a_stolen_session_id_carries_no_open_state(live_gateway, two_tenants):
    acme, beta = two_tenants
    session_id = await raw_initialize(live_gateway.url, acme.key)
    opened = await raw_call(
        live_gateway.url, acme.key, session_id, "open_toolbox", {"toolbox": "dev"}
    )
    assert '"servers_connected\\": 1' in opened
    echo = use("dev", "fixture", "echo", {"text": "x"})
    # The owner of the session can use what it opened ...
    assert "ACME:x" in await raw_call(live_gateway.url, acme.key, session_id, "use_tool", echo)
    # ... another tenant's key presenting the same session id reaches only its own state.
    stolen = await raw_call(live_gateway.url, beta.key, session_id, "use_tool", echo)
    assert "Toolbox 'dev' is not open. Call open_toolbox first." in stolen
    assert "ACME" not in stolen


async def raw_initialize(url: str, key: str) -> str:
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS, key=key)
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


async def raw_call(url: str, key: str, session_id: str, tool: str, arguments: dict) -> str:
    params = {"name": tool, "arguments": arguments}
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await raw_rpc(http, url, "tools/call", params, key=key, session_id=session_id)
    assert response.status_code == 200, response.text
    return response.text


async def test_sessions_of_one_tenant_share_one_downstream_process(live_gateway, amake_setup):
    import anyio

    marker = uuid.uuid4().hex
    setup = await amake_setup()
    await setup.afixture_server(await setup.atoolbox("dev"), "shared", "--prefix", marker)
    texts: list[str] = []
    # What the key opened, every session of it sees; at most 25 at once stays under the
    # key's in-flight limit (32).
    async with live_gateway.session(setup.key) as opener:
        payload(await opener.call_tool("open_toolbox", {"toolbox": "dev"}))
    at_once = anyio.CapacityLimiter(25)

    async def one_session(index: int) -> None:
        async with at_once, live_gateway.session(setup.key) as session:
            result = await session.call_tool(
                "use_tool", use("dev", "shared", "echo", {"text": str(index)})
            )
            texts.append(text_of(result))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for index in range(50):
                group.start_soon(one_session, index)
    assert sorted(texts) == sorted(f"{marker}{index}" for index in range(50))
    assert len(processes_with(marker)) == 1
