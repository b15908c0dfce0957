"""initialize / server/discover and tools/list, for both protocol revisions."""

import httpx2
import pytest

from tests.harness.results import INITIALIZE_PARAMS, raw_rpc, refusal_json, refusal_reason

pytestmark = pytest.mark.anyio

EXPECTED_INSTRUCTIONS = """## Available Toolboxes

- **dev** (2 servers): Development environment tools
- **prod** (1 server): Production environment tools

To open a toolbox and see available tools:
1. Call `open_toolbox` with the desired toolbox name
2. Inspect the returned tools array, then call `use_tool`

When the right toolbox is not obvious, call `search_tools` with what you want to do: \
it returns the best-matching tools of every toolbox, ready for `use_tool`."""


@pytest.fixture
def acme(make_setup):
    setup = make_setup("acme")
    dev = setup.toolbox("dev", "Development environment tools")
    setup.fixture_server(dev, "one")
    setup.fixture_server(dev, "two")
    prod = setup.toolbox("prod", "Production environment tools")
    setup.fixture_server(prod, "three")
    return setup


async def test_initialize_instructions_list_the_tenants_toolboxes(live_gateway, acme, amake_setup):
    other = await amake_setup("other")
    await other.atoolbox("secret", "Another tenant's toolbox")
    async with live_gateway.session(acme.key) as session:
        result = session.initialize_result
        assert result.protocol_version == "2025-11-25"
        assert result.instructions == EXPECTED_INSTRUCTIONS


async def test_discover_instructions_for_2026_clients(live_gateway, acme):
    async with live_gateway.client(acme.key) as client:
        assert client.protocol_version == "2026-07-28"
        assert client.instructions == EXPECTED_INSTRUCTIONS


async def test_instructions_of_a_key_limited_to_some_toolboxes(live_gateway, amake_setup):
    setup = await amake_setup("scoped")
    dev = await setup.atoolbox("dev", "Development environment tools")
    await setup.atoolbox("prod", "Production environment tools")
    await setup.api_key.toolboxes.aset([dev])
    async with live_gateway.session(setup.key) as session:
        instructions = session.initialize_result.instructions
    assert "**dev** (0 servers): Development environment tools" in instructions
    assert "prod" not in instructions


async def test_instructions_with_no_toolboxes(live_gateway, amake_setup):
    setup = await amake_setup("empty")
    async with live_gateway.session(setup.key) as session:
        instructions = session.initialize_result.instructions
    assert instructions.startswith("## Available Toolboxes\n\nNo toolboxes are available")


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_tools_list_is_exactly_the_three_meta_tools(live_gateway, acme, revision):
    if revision == "2025-11-25":
        async with live_gateway.session(acme.key) as session:
            tools = (await session.list_tools()).tools
    else:
        async with live_gateway.client(acme.key) as client:
            tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == ["open_toolbox", "use_tool", "search_tools"]
    open_toolbox, use_tool, search_tools = tools
    assert open_toolbox.input_schema["required"] == ["toolbox"]
    assert open_toolbox.input_schema["additionalProperties"] is False
    assert open_toolbox.input_schema["properties"]["toolbox"]["minLength"] == 1
    assert open_toolbox.annotations.idempotent_hint is True
    assert open_toolbox.annotations.open_world_hint is True
    assert open_toolbox.annotations.read_only_hint is True
    assert use_tool.input_schema["required"] == ["tool"]
    assert use_tool.input_schema["additionalProperties"] is False
    tool_schema = use_tool.input_schema["properties"]["tool"]
    assert tool_schema["required"] == ["toolbox", "server", "name"]
    assert tool_schema["additionalProperties"] is False
    assert all(
        tool_schema["properties"][f]["minLength"] == 1 for f in ("toolbox", "server", "name")
    )
    assert use_tool.input_schema["properties"]["arguments"]["type"] == "object"
    assert use_tool.annotations.open_world_hint is True
    assert "open_toolbox" in use_tool.description
    assert search_tools.input_schema["required"] == ["query"]
    assert search_tools.input_schema["additionalProperties"] is False
    properties = search_tools.input_schema["properties"]
    assert set(properties) == {"query", "toolbox", "limit"}
    assert properties["query"]["minLength"] == 1
    assert properties["toolbox"]["minLength"] == 1
    assert properties["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 50,
        "default": 10,
        "description": properties["limit"]["description"],
    }
    hints = search_tools.annotations
    assert (hints.idempotent_hint, hints.read_only_hint, hints.open_world_hint) == (True,) * 3
    assert "use_tool" in search_tools.description


async def test_instructions_name_search_tools(live_gateway, acme):
    async with live_gateway.session(acme.key) as session:
        instructions = session.initialize_result.instructions
    assert "call `search_tools`" in instructions


async def test_no_standalone_stream_is_held_open(live_gateway, amake_setup):
    setup = await amake_setup()
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.get(
            live_gateway.url,
            headers={"Authorization": f"Bearer {setup.key}", "Accept": "text/event-stream"},
        )
    assert refusal_reason(response, 405) == "method_not_allowed"
    assert response.headers["allow"] == "POST"


async def test_a_session_is_not_ended_by_delete(live_gateway, amake_setup):
    """What a session opened is its key's: a DELETE ends nothing, so it is refused as the
    2025-11-25 transport says a server that does not let clients end sessions answers
    (405); the session id goes on working (a 2xx would have promised a 404 for it)."""
    setup = await amake_setup()
    headers = {
        "Authorization": f"Bearer {setup.key}",
        "Accept": "application/json, text/event-stream",
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        started = await raw_rpc(
            http, live_gateway.url, "initialize", INITIALIZE_PARAMS, key=setup.key
        )
        session_id = started.headers["mcp-session-id"]
        ended = await http.delete(
            live_gateway.url, headers={**headers, "Mcp-Session-Id": session_id}
        )
        listed = await raw_rpc(
            http, live_gateway.url, "tools/list", {}, key=setup.key, session_id=session_id
        )
    assert ended.status_code == 405
    assert ended.headers["allow"] == "POST"
    assert ended.json() == refusal_json(
        405,
        "method_not_allowed",
        "This endpoint does not end sessions (DELETE): what a session opened belongs to its "
        "API key, which other sessions may be using. Stop sending the session id instead.",
    )
    assert listed.status_code == 200 and "open_toolbox" in listed.text
