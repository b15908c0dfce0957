"""What a client opened belongs to its API key: clients that open a session per call
(the MCP Inspector CLI, LangChain's adapters) and stateless clients see it; another key
of the same tenant does not, and random session ids create nothing in the store."""

import uuid

import httpx2
import pytest

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.results import error_of, payload, raw_rpc, text_of, use

# One gateway and tenant for the module; each test has keys of its own.
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("open_state")]

ECHO = use("dev", "fixture", "echo", {"text": "hi"})


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    setup = make_tenant_setup("acme")
    setup.fixture_server(setup.toolbox("dev"), "fixture")
    return setup


@pytest.fixture
def acme(world) -> TenantSetup:
    """The module's tenant, with a key no other test used."""
    return world.new_key()


@pytest.fixture
def second_key(world) -> str:
    return world.new_key().key


@pytest.fixture
def live_gateway(module_gateway) -> LiveGateway:
    return module_gateway


async def test_a_toolbox_opened_in_one_session_is_open_in_the_next(live_gateway, acme):
    """The Inspector CLI's flow: each command is a session of its own, ended (DELETE)
    before the next one starts."""
    async with live_gateway.session(acme.key) as first:
        payload(await first.call_tool("open_toolbox", {"toolbox": "dev"}))
    async with live_gateway.session(acme.key) as second:
        result = await second.call_tool("use_tool", ECHO)
    assert text_of(result) == "hi"


async def test_a_stateless_client_uses_what_another_client_of_its_key_opened(live_gateway, acme):
    async with live_gateway.client(acme.key) as opener:
        payload(await opener.call_tool("open_toolbox", {"toolbox": "dev"}))
    async with live_gateway.client(acme.key) as user:
        result = await user.call_tool("use_tool", ECHO)
    assert text_of(result) == "hi"


async def test_another_key_of_the_same_tenant_has_not_opened_it(live_gateway, acme, second_key):
    async with live_gateway.session(acme.key) as opener:
        payload(await opener.call_tool("open_toolbox", {"toolbox": "dev"}))
        async with live_gateway.session(second_key) as other:
            refused = await other.call_tool("use_tool", ECHO)
        assert error_of(refused) == (
            "TOOLBOX_NOT_OPEN",
            "Error executing tool: Toolbox 'dev' is not open. Call open_toolbox first.",
        )
        assert text_of(await opener.call_tool("use_tool", ECHO)) == "hi"


def open_entries(live_gateway) -> list[str]:
    backend = live_gateway.gateway.shared.backend  # the embedded store (diskcache)
    return [key for key in backend._cache if ":open:" in key]


async def test_random_session_ids_create_nothing_in_the_store(live_gateway, acme):
    """One tenant opening with 320 made-up session ids adds one entry: its key's. (Last of
    the module: it empties the tenant's open rate-limit bucket.)"""
    call = {"name": "open_toolbox", "arguments": {"toolbox": "dev"}}
    before = set(open_entries(live_gateway))
    async with httpx2.AsyncClient(timeout=60) as http:
        for _ in range(320):
            answer = await raw_rpc(
                http,
                live_gateway.url,
                "tools/call",
                call,
                key=acme.key,
                session_id=uuid.uuid4().hex,
            )
            # Opened, or refused by the open rate limit: neither creates an entry.
            assert '\\"servers_connected\\": 1' in answer.text or "RATE_LIMITED" in answer.text
    after = set(open_entries(live_gateway))
    mine = ":1:" + live_gateway.gateway.open_toolboxes._entry(f"key:{acme.api_key.pk}", "dev")
    assert mine in after
    assert after - before <= {mine}
