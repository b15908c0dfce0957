"""`/mcp/t/<tenant-slug>` (the contract): the same endpoint as `/mcp` for the tenant the
credential belongs to; another tenant's slug and an unknown one get one 404 answer."""

from __future__ import annotations

from dataclasses import replace

import httpx2
import pytest

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.results import INITIALIZE_PARAMS, payload, refusal_json

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("tenant_endpoint")]


@pytest.fixture(scope="module")
def world(module_db) -> tuple[TenantSetup, TenantSetup]:
    acme = make_tenant_setup("acme")
    acme.toolbox("dev")
    bravo = make_tenant_setup("bravo")
    bravo.toolbox("ops")
    return acme, bravo


@pytest.fixture
def acme(world) -> TenantSetup:
    """Tenant acme, with a key no other test used."""
    return world[0].new_key()


@pytest.fixture
def live_gateway(module_gateway) -> LiveGateway:
    return module_gateway


def at(live_gateway: LiveGateway, suffix: str) -> str:
    return live_gateway.url.rstrip("/") + suffix


async def initialize(url: str, key: str | None) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS}
    headers = {"Accept": "application/json, text/event-stream"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, json=body, headers=headers)


async def test_the_tenants_own_path_serves_it(live_gateway, acme):
    own = replace(live_gateway, url=at(live_gateway, "/t/acme"))
    async with own.session(acme.key) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert opened["toolbox"] == "dev"


@pytest.mark.parametrize("suffix", ["/t/bravo", "/t/nobody", "/t/", "/t/acme/more", "/t/bravo/"])
async def test_another_tenants_path_and_an_unknown_one_answer_alike(live_gateway, acme, suffix):
    response = await initialize(at(live_gateway, suffix), acme.key)
    assert response.status_code == 404
    assert response.json() == refusal_json(
        404, "not_found", "There is no MCP endpoint at this path for this credential."
    )


async def test_without_a_credential_it_is_the_401_of_mcp(live_gateway, world):
    plain = await initialize(live_gateway.url, None)
    tenant = await initialize(at(live_gateway, "/t/bravo"), None)
    unknown = await initialize(at(live_gateway, "/t/nobody"), None)
    assert plain.status_code == tenant.status_code == unknown.status_code == 401
    assert plain.json() == tenant.json() == unknown.json()
