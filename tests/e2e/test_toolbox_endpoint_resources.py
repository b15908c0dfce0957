"""The toolbox endpoint's resources: the union of its servers' resources and templates
(server-everything's), each read from the server that lists it or whose template it fits,
unchanged; a URI no server of this toolbox offers (another toolbox's, another tenant's, an
unknown one) gets the protocol's resource-not-found error (-32002 up to 2025-11-25, invalid
params from 2026-07-28, which retired that code)."""

from __future__ import annotations

import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from tests.harness.live import LiveGateway
from tests.harness.results import refusal_json
from tests.harness.toolbox_world import endpoint, make_world, needs_node

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.once_pg,
    pytest.mark.xdist_group("toolbox_endpoint_resources"),
    needs_node,
]

DOCUMENT_PREFIX = "demo://resource/static/document/"
TEXT_TEMPLATE = "demo://resource/dynamic/text/{resourceId}"


@pytest.fixture(scope="module")
def world(module_db):
    return make_world()


@pytest.fixture
def acme(world):
    return world[0].new_key()


@pytest.fixture
def bravo(world):
    return world[1].new_key()


@pytest.fixture
def dev(module_gateway) -> LiveGateway:
    return endpoint(module_gateway, "acme", "dev")


async def test_resources_are_listed_and_read_unchanged(dev, acme):
    async with dev.session(acme.key) as session:
        listed = (await session.list_resources()).resources
        documents = [r for r in listed if str(r.uri).startswith(DOCUMENT_PREFIX)]
        assert documents, [str(r.uri) for r in listed]
        read = await session.read_resource(documents[0].uri)
    assert [str(content.uri) for content in read.contents] == [str(documents[0].uri)]
    assert read.contents[0].text


async def test_a_templated_uri_is_read_from_the_templates_server(dev, acme):
    async with dev.client(acme.key) as client:  # 2026-07-28
        templates = (await client.list_resource_templates()).resource_templates
        assert TEXT_TEMPLATE in [t.uri_template for t in templates]
        read = await client.read_resource("demo://resource/dynamic/text/7")
    assert str(read.contents[0].uri) == "demo://resource/dynamic/text/7"


async def test_a_toolbox_without_resources_declares_none(module_gateway, acme):
    async with endpoint(module_gateway, "acme", "plain").session(acme.key) as session:
        capabilities = session.server_capabilities
    assert capabilities is not None
    assert capabilities.tools is not None
    assert capabilities.resources is None and capabilities.prompts is None


@pytest.mark.parametrize("generation", ["2025-11-25", "2026-07-28"])
async def test_another_toolboxs_and_an_unknown_uri_are_not_found(
    module_gateway, dev, acme, generation
):
    async with dev.session(acme.key) as session:
        document = next(
            r.uri
            for r in (await session.list_resources()).resources
            if str(r.uri).startswith(DOCUMENT_PREFIX)
        )
    plain = endpoint(module_gateway, "acme", "plain")
    for uri in (str(document), "demo://resource/dynamic/text/7", "file:///etc/passwd"):
        refused = await read_refusal(plain, acme.key, uri, generation)
        assert refused.code == (-32002 if generation == "2025-11-25" else INVALID_PARAMS)
        assert refused.message == f"Resource not found: {uri}"
        assert refused.error.data == {"uri": uri}


async def read_refusal(gateway: LiveGateway, key: str, uri: str, generation: str) -> MCPError:
    """The error a read of `uri` gets, from a client of that protocol generation (caught
    within the client's block, which would wrap it in its task groups' exception group)."""
    if generation == "2025-11-25":
        async with gateway.session(key) as session:
            try:
                await session.read_resource(uri)
            except MCPError as exc:
                return exc
    else:
        async with gateway.client(key) as client:
            try:
                await client.read_resource(uri)
            except MCPError as exc:
                return exc
    raise AssertionError(f"{uri} was read")


async def test_another_tenants_key_reads_nothing_of_this_toolbox(module_gateway, bravo):
    """bravo's key on acme's `dev` (bravo has a `dev` of its own): the tenant's 404, before
    any resource is looked for."""
    acme_dev = endpoint(module_gateway, "acme", "dev")
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "resources/read",
        "params": {"uri": "demo://resource/dynamic/text/7"},
    }
    headers = {
        "Authorization": f"Bearer {bravo.key}",
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": "2025-11-25",
    }
    async with httpx2.AsyncClient(timeout=60) as http:
        response = await http.post(acme_dev.url, json=body, headers=headers)
    assert response.status_code == 404
    assert response.json() == refusal_json(
        404, "not_found", "There is no MCP endpoint at this path for this credential."
    )
