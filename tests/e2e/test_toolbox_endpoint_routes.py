"""`/mcp/t/<tenant-slug>/toolboxes/<toolbox>` (the contract's "One toolbox as an MCP server
of its own"): served to a credential that may open the toolbox, on both protocol
generations, with the same credentials as `/mcp/t/<slug>`; a credential that may not open
it, an unknown toolbox, one its admin does not offer this way and another tenant's slug all
get the one 404 of `/mcp/t/<slug>`."""

from __future__ import annotations

from dataclasses import replace

import httpx2
import pytest
from asgiref.sync import sync_to_async

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.results import INITIALIZE_PARAMS, refusal_json, use
from toolboxes.models import Toolbox

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("toolbox_endpoint_routes")]

NOT_FOUND = refusal_json(
    404, "not_found", "There is no MCP endpoint at this path for this credential."
)


@pytest.fixture(scope="module")
def world(module_db) -> tuple[TenantSetup, TenantSetup]:
    acme = make_tenant_setup("acme")
    dev = acme.toolbox("dev", "Development tools")
    acme.fixture_server(dev, "files")
    acme.toolbox("ops")
    big = acme.toolbox("big", "A toolbox its admin may keep behind the meta-tools")
    acme.fixture_server(big, "files")
    bravo = make_tenant_setup("bravo")
    bravo.toolbox("dev")
    return acme, bravo


@pytest.fixture
def acme(world) -> TenantSetup:
    return world[0].new_key()


@pytest.fixture
def ops_only(world) -> TenantSetup:
    """A key of acme's that may open `ops` only."""
    acme = world[0]
    return acme.new_key(toolboxes=[acme.tenant.toolboxes.get(name="ops")])


@pytest.fixture
def live_gateway(module_gateway) -> LiveGateway:
    return module_gateway


def at(live_gateway: LiveGateway, suffix: str) -> str:
    return live_gateway.url.rstrip("/") + suffix


async def initialize(url: str, key: str | None, header: str = "Authorization") -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS}
    headers = {"Accept": "application/json, text/event-stream"}
    if key:
        headers[header] = f"Bearer {key}" if header == "Authorization" else key
    async with httpx2.AsyncClient(timeout=60) as http:
        return await http.post(url, json=body, headers=headers)


async def test_a_2025_client_lists_the_toolboxs_tools(live_gateway, acme):
    endpoint = replace(live_gateway, url=at(live_gateway, "/t/acme/toolboxes/dev"))
    async with endpoint.session(acme.key) as session:
        listed = await session.list_tools()
    names = [tool.name for tool in listed.tools]
    assert "files__echo" in names and "files__add" in names


async def test_a_2026_client_lists_and_calls(live_gateway, acme):
    endpoint = replace(live_gateway, url=at(live_gateway, "/t/acme/toolboxes/dev/"))
    async with endpoint.client(acme.key, header="X-API-Key") as client:
        listed = await client.list_tools()
        assert "files__echo" in [tool.name for tool in listed.tools]
        echoed = await client.call_tool("files__echo", {"text": "hi"})
    assert not echoed.is_error
    assert echoed.content[0].text == "hi"


@pytest.mark.parametrize(
    "suffix",
    [
        "/t/acme/toolboxes/nothing",  # no such toolbox
        "/t/bravo/toolboxes/dev",  # another tenant's (it has a `dev` too)
        "/t/nobody/toolboxes/dev",  # no such tenant
        "/t/acme/toolboxes/",  # no toolbox named
        "/t/acme/toolboxes/dev/more",  # more than a toolbox
        "/t/acme/toolboxes",
    ],
)
async def test_unknown_and_foreign_toolboxes_get_the_tenants_404(live_gateway, acme, suffix):
    response = await initialize(at(live_gateway, suffix), acme.key)
    assert response.status_code == 404
    assert response.json() == NOT_FOUND


async def test_a_toolbox_the_key_may_not_open_is_the_same_404(live_gateway, ops_only):
    refused = await initialize(at(live_gateway, "/t/acme/toolboxes/dev"), ops_only.key)
    unknown = await initialize(at(live_gateway, "/t/acme/toolboxes/nothing"), ops_only.key)
    served = await initialize(at(live_gateway, "/t/acme/toolboxes/ops"), ops_only.key)
    assert refused.status_code == unknown.status_code == 404
    assert refused.json() == unknown.json() == NOT_FOUND
    assert served.status_code == 200, served.text


async def test_without_a_credential_it_is_the_401_of_mcp(live_gateway, world):
    plain = await initialize(live_gateway.url, None)
    toolbox = await initialize(at(live_gateway, "/t/acme/toolboxes/dev"), None)
    assert plain.status_code == toolbox.status_code == 401
    assert plain.json() == toolbox.json()


async def test_the_tenant_endpoint_still_serves_the_meta_tools(live_gateway, acme):
    tenant = replace(live_gateway, url=at(live_gateway, "/t/acme"))
    async with tenant.session(acme.key) as session:
        listed = await session.list_tools()
    assert {"open_toolbox", "use_tool"} <= {tool.name for tool in listed.tools}


@sync_to_async
def offer_alone(name: str, offered: bool) -> None:
    """As the admin's form saves it (a save: the tenant's configuration version moves)."""
    toolbox = Toolbox.objects.get(tenant__slug="acme", name=name)
    toolbox.offered_alone = offered
    toolbox.save()


async def test_a_toolbox_not_offered_alone_is_the_404_and_its_meta_tools_still_work(
    live_gateway, acme
):
    """Switched off by its admin: the one 404 of `/mcp/t/<slug>` from the next request on,
    the same body as an unknown toolbox; `open_toolbox` and `use_tool` still reach it at
    `/mcp/t/<slug>`. Switched on again: served again."""
    big = at(live_gateway, "/t/acme/toolboxes/big")
    assert (await initialize(big, acme.key)).status_code == 200  # on by default
    await offer_alone("big", False)
    try:
        refused = await initialize(big, acme.key)
        unknown = await initialize(at(live_gateway, "/t/acme/toolboxes/nothing"), acme.key)
        assert refused.status_code == unknown.status_code == 404
        assert refused.json() == unknown.json() == NOT_FOUND

        tenant = replace(live_gateway, url=at(live_gateway, "/t/acme"))
        async with tenant.session(acme.key) as session:
            opened = await session.call_tool("open_toolbox", {"toolbox": "big"})
            assert not opened.is_error, opened
            echoed = await session.call_tool(
                "use_tool", use("big", "files", "echo", {"text": "hi"})
            )
        assert not echoed.is_error, echoed
        assert echoed.content[0].text == "hi"
    finally:
        await offer_alone("big", True)

    endpoint = replace(live_gateway, url=big)
    async with endpoint.session(acme.key) as session:
        listed = await session.list_tools()
        called = await session.call_tool("files__echo", {"text": "again"})
    assert "files__echo" in [tool.name for tool in listed.tools]
    assert not called.is_error and called.content[0].text == "again"
