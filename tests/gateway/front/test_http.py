"""The /mcp ASGI app as a unit, driven through httpx's ASGI transport (no server, no
socket): credentials refused before anything else, the methods it answers, a session id
for an `initialize`, the caller's instructions, and the meta-tools behind it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings

from mcp_gateway import Gateway, GatewayOptions
from tests.harness.live import TenantSetup, make_tenant_setup
from tests.harness.results import refusal_reason

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "unit", "version": "1"},
    },
}


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    gateway = Gateway(GatewayOptions.from_settings(settings))
    async with gateway.running():
        transport = httpx2.ASGITransport(app=gateway)
        async with httpx2.AsyncClient(transport=transport, base_url="http://localhost") as http:
            yield http


@pytest.fixture
async def acme() -> TenantSetup:
    setup = await sync_to_async(make_tenant_setup)("acme")
    await sync_to_async(setup.toolbox)("dev")
    return setup


def rpc(method: str, params: dict[str, Any] | None = None, id: int = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}


async def test_no_credential_is_refused_with_a_challenge(client):
    response = await client.post("/mcp", json=INITIALIZE, headers=ACCEPT)
    assert refusal_reason(response, 401) == "missing_api_key"
    assert response.headers["www-authenticate"].startswith("Bearer resource_metadata=")


async def test_two_credentials_are_refused(client):
    headers = {**ACCEPT, "authorization": "Bearer wb_x_y", "x-api-key": "wb_x_y"}
    response = await client.post("/mcp", json=INITIALIZE, headers=headers)
    assert refusal_reason(response, 400) == "multiple_credentials"


async def test_get_and_delete_are_answered_without_a_stream(client, acme):
    key = {"authorization": f"Bearer {acme.key}"}
    response = await client.get("/mcp", headers=key)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    response = await client.delete("/mcp", headers={**key, "mcp-session-id": "abc"})
    assert refusal_reason(response, 405) == "method_not_allowed"  # nothing to end
    assert response.headers["allow"] == "POST"


async def test_an_initialize_gets_a_session_and_the_callers_instructions(client, acme):
    headers = {**ACCEPT, "authorization": f"Bearer {acme.key}"}
    response = await client.post("/mcp", json=INITIALIZE, headers=headers)
    assert response.status_code == 200
    assert len(response.headers["mcp-session-id"]) == 32
    result = response.json()["result"]
    assert "**dev** (0 servers): dev tools" in result["instructions"]


async def test_the_meta_tools_answer_behind_it(client, acme):
    headers = {
        **ACCEPT,
        "authorization": f"Bearer {acme.key}",
        "mcp-protocol-version": "2025-11-25",
        "mcp-session-id": "unit-session",
    }
    listed = await client.post("/mcp", json=rpc("tools/list"), headers=headers)
    names = [tool["name"] for tool in listed.json()["result"]["tools"]]
    assert names == ["open_toolbox", "use_tool", "search_tools"]
    call = rpc("tools/call", {"name": "open_toolbox", "arguments": {"toolbox": "nope"}})
    opened = (await client.post("/mcp", json=call, headers=headers)).json()["result"]
    assert opened["isError"] is True
    assert opened["structuredContent"]["error"]["code"] == "TOOLBOX_NOT_FOUND"
    call = rpc("tools/call", {"name": "open_toolbox", "arguments": {"toolbox": "dev"}})
    opened = (await client.post("/mcp", json=call, headers=headers)).json()["result"]
    assert json.loads(opened["content"][0]["text"])["servers_connected"] == 0


async def test_a_cancellation_is_accepted(client, acme):
    headers = {
        **ACCEPT,
        "authorization": f"Bearer {acme.key}",
        "mcp-protocol-version": "2025-11-25",
        "mcp-session-id": "unit-session",
    }
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
    response = await client.post("/mcp", json=note, headers=headers)
    assert response.status_code == 202
