"""The 2026-07-28 routing headers (`Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`) held
to the JSON-RPC body as the revision requires, on `/mcp/t/<slug>` and on a toolbox
endpoint: a header missing, repeated or saying another thing than the body is refused with
HTTP 400 and the revision's HEADER_MISMATCH (-32020) before anything runs. The SDK's
server checks this (`mcp.shared.inbound.classify_inbound_request`); these tests pin that
the gateway keeps it. 2025-11-25 defines no such headers: they are not looked at there."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import httpx2
import pytest
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    HEADER_MISMATCH,
    PROTOCOL_VERSION_META_KEY,
)

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup

pytestmark = [pytest.mark.anyio, pytest.mark.once, pytest.mark.xdist_group("routing_headers")]

MODERN = "2026-07-28"
ENVELOPE = {
    PROTOCOL_VERSION_META_KEY: MODERN,
    CLIENT_CAPABILITIES_META_KEY: {},
    CLIENT_INFO_META_KEY: {"name": "raw", "version": "0"},
}
METHOD_MISMATCH = "mcp-method header does not match the request body's method"
NAME_MISMATCH = "mcp-name header does not match the request body's 'name' parameter"
URI_MISMATCH = "mcp-name header does not match the request body's 'uri' parameter"
VERSION_MISMATCH = (
    "mcp-protocol-version header does not match the request envelope's protocol version"
)


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    acme = make_tenant_setup("acme")
    acme.fixture_server(acme.toolbox("dev"), "files")
    return acme


@pytest.fixture
def acme(world) -> TenantSetup:
    return world.new_key()


def at(gateway: LiveGateway, path: str) -> LiveGateway:
    return replace(gateway, url=gateway.url.rstrip("/") + path)


# Each endpoint with a call it serves: the tool's name and its arguments.
ENDPOINTS = {
    "tenant": ("/t/acme", "search_tools", {"query": "echo"}),
    "toolbox": ("/t/acme/toolboxes/dev", "files__echo", {"text": "hi"}),
}


async def post(
    url: str, key: str, method: str, params: dict[str, Any], headers: list[tuple[str, str]]
) -> httpx2.Response:
    """One 2026-07-28 request (its envelope in `_meta`) with exactly these routing headers."""
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": ENVELOPE}}
    sent = [
        ("Authorization", f"Bearer {key}"),
        ("Accept", "application/json, text/event-stream"),
        *headers,
    ]
    async with httpx2.AsyncClient(timeout=60) as http:
        return await http.post(url, json=body, headers=sent)


def mismatch(response: httpx2.Response, message: str) -> None:
    assert response.status_code == 400, response.text
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": HEADER_MISMATCH, "message": message},
    }
    assert HEADER_MISMATCH == -32020


def call_headers(name: str, method: str = "tools/call") -> list[tuple[str, str]]:
    return [("MCP-Protocol-Version", MODERN), ("Mcp-Method", method), ("Mcp-Name", name)]


@pytest.fixture(params=sorted(ENDPOINTS))
def target(request, module_gateway) -> tuple[str, str, dict[str, Any]]:
    path, tool, arguments = ENDPOINTS[request.param]
    return at(module_gateway, path).url, tool, arguments


async def test_headers_that_agree_with_the_body_are_served(target, acme):
    url, tool, arguments = target
    params = {"name": tool, "arguments": arguments}
    response = await post(url, acme.key, "tools/call", params, call_headers(tool))
    assert response.status_code == 200, response.text
    assert "error" not in response.text[:200]
    assert '"isError":false' in response.text.replace(" ", "")


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        (lambda tool: call_headers(tool, "tools/list"), METHOD_MISMATCH),
        (lambda tool: call_headers(tool)[::2], METHOD_MISMATCH),  # no Mcp-Method
        (lambda tool: call_headers("other_tool"), NAME_MISMATCH),
        (lambda tool: call_headers(tool)[:2], NAME_MISMATCH),  # no Mcp-Name
        (lambda tool: call_headers(tool.upper()), NAME_MISMATCH),  # values match exactly
        (
            lambda tool: [("MCP-Protocol-Version", "2099-01-01"), *call_headers(tool)[1:]],
            VERSION_MISMATCH,
        ),
        (
            lambda tool: [*call_headers(tool), ("Mcp-Method", "tools/call")],
            "mcp-method header appears more than once",
        ),
        (
            lambda tool: [*call_headers(tool), ("Mcp-Name", tool)],
            "mcp-name header appears more than once",
        ),
    ],
    ids=[
        "other-method",
        "no-method",
        "other-name",
        "no-name",
        "name-case",
        "other-version",
        "method-twice",
        "name-twice",
    ],
)
async def test_a_tool_call_whose_headers_disagree_is_refused(target, acme, headers, message):
    url, tool, arguments = target
    params = {"name": tool, "arguments": arguments}
    mismatch(await post(url, acme.key, "tools/call", params, headers(tool)), message)


async def test_a_base64_encoded_name_is_decoded_before_comparing(target, acme):
    """The revision's form for a value a header cannot carry as is (`=?base64?...?=`)."""
    url, tool, arguments = target
    encoded = "=?base64?" + base64.b64encode(tool.encode()).decode() + "?="
    params = {"name": tool, "arguments": arguments}
    response = await post(url, acme.key, "tools/call", params, call_headers(encoded))
    assert response.status_code == 200, response.text


async def test_a_list_needs_its_method_header_and_no_name(target, acme):
    url, _, _ = target
    version = [("MCP-Protocol-Version", MODERN)]
    listed = await post(url, acme.key, "tools/list", {}, [*version, ("Mcp-Method", "tools/list")])
    assert listed.status_code == 200, listed.text
    mismatch(await post(url, acme.key, "tools/list", {}, version), METHOD_MISMATCH)


async def test_a_read_and_a_prompt_name_their_uri_and_name(module_gateway, acme):
    url = at(module_gateway, "/t/acme/toolboxes/dev").url
    version = [("MCP-Protocol-Version", MODERN)]
    read = [*version, ("Mcp-Method", "resources/read"), ("Mcp-Name", "file:///other")]
    response = await post(url, acme.key, "resources/read", {"uri": "file:///report.pdf"}, read)
    mismatch(response, URI_MISMATCH)
    prompt = [*version, ("Mcp-Method", "prompts/get"), ("Mcp-Name", "files__other")]
    response = await post(url, acme.key, "prompts/get", {"name": "files__greet"}, prompt)
    mismatch(response, NAME_MISMATCH)


async def test_a_2025_request_is_not_held_to_the_headers(module_gateway, acme):
    """2025-11-25 has no routing headers: a stray one saying something else is ignored.
    The version header picks the generation (the SDK routes on it alone), so a body
    carrying a 2026-07-28 envelope under a 2025-11-25 header is a 2025-11-25 request."""
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": ENVELOPE}}
    headers = {
        "Authorization": f"Bearer {acme.key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
        "Mcp-Method": "prompts/list",
        "Mcp-Name": "nothing",
    }
    async with httpx2.AsyncClient(timeout=60) as http:
        for path in ("/t/acme", "/t/acme/toolboxes/dev"):
            response = await http.post(at(module_gateway, path).url, json=body, headers=headers)
            assert response.status_code == 200, response.text
            assert '"tools"' in response.text
