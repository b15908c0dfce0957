"""The toolbox endpoint's tools: each exposed tool named `<server>__<tool>` with everything
of its own, a filtered or held one absent and refused with use_tool's text, an unknown name
refused with use_tool's TOOL_NOT_FOUND, and every call held to use_tool's rules (its rate
limit, its call log) with the toolbox open implicitly; a URI a result handed a key is read
from the server that returned it, for that key."""

from __future__ import annotations

from dataclasses import replace

import mcp_types as types
import pytest
from asgiref.sync import sync_to_async
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND

from calls.models import CallRecord
from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.results import error_of, payload, text_of
from tests.harness.waits import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("toolbox_endpoint_tools")]


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    acme = make_tenant_setup("acme")
    dev = acme.toolbox("dev", "Development tools")
    acme.fixture_server(dev, "files")
    acme.fixture_server(dev, "limited", tool_filters=["echo"], position=1)
    acme.fixture_server(acme.toolbox("broken"), "gone", "--exit-at-start")
    # Every tool held until an admin approves it (none is).
    acme.fixture_server(acme.toolbox("held"), "guarded", pinning="approve-all")
    return acme


@pytest.fixture
def acme(world) -> TenantSetup:
    return world.new_key()


@pytest.fixture
def live_gateway(module_gateway) -> LiveGateway:
    return replace(module_gateway, url=module_gateway.url.rstrip("/") + "/t/acme/toolboxes/dev")


@pytest.fixture
def tenant_endpoint(module_gateway) -> LiveGateway:
    return replace(module_gateway, url=module_gateway.url.rstrip("/") + "/t/acme")


async def test_every_exposed_tool_is_listed_with_its_own_definition(
    live_gateway, tenant_endpoint, acme
):
    async with tenant_endpoint.session(acme.key) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    async with live_gateway.session(acme.key) as session:
        listed = (await session.list_tools()).tools
    assert [tool.name for tool in listed] == [
        f"{entry['server']}__{entry['name']}" for entry in opened["tools"]
    ]
    assert "limited__echo" in [tool.name for tool in listed]
    assert "limited__add" not in [tool.name for tool in listed]  # its filter leaves it out
    adder = next(tool for tool in listed if tool.name == "files__add")
    own = next(e for e in opened["tools"] if (e["server"], e["name"]) == ("files", "add"))
    assert adder.title == own["title"] == "Adder"
    assert adder.description == own["description"]
    assert adder.input_schema == own["inputSchema"]
    assert adder.output_schema == own["outputSchema"]
    assert adder.annotations.read_only_hint is True


async def test_a_call_is_the_tools_own_answer_without_opening(live_gateway, acme):
    async with live_gateway.session(acme.key) as session:
        added = await session.call_tool("files__add", {"a": 2, "b": 3})
        echoed = await session.call_tool("limited__echo", {"text": "hello"})
    assert not added.is_error and added.structured_content == {"sum": 5}
    assert text_of(echoed) == "hello"


async def test_a_filtered_tool_is_refused_with_use_tools_text(live_gateway, acme):
    async with live_gateway.client(acme.key) as client:
        refused = await client.call_tool("limited__add", {"a": 1, "b": 2})
    assert error_of(refused) == (
        "TOOL_NOT_FOUND",
        "Error executing tool: Tool 'add' not found in server 'limited'",
    )


async def test_an_unknown_name_is_tool_not_found(live_gateway, acme):
    async with live_gateway.session(acme.key) as session:
        no_server = await session.call_tool("nothing__echo", {})
        no_tool = await session.call_tool("files__nothing", {})
        bare = await session.call_tool("echo", {"text": "x"})
    assert error_of(no_server) == (
        "TOOL_NOT_FOUND",
        "Error executing tool: Tool 'nothing__echo' not found in toolbox 'dev'",
    )
    assert error_of(no_tool) == (
        "TOOL_NOT_FOUND",
        "Error executing tool: Tool 'nothing' not found in server 'files'",
    )
    assert error_of(bare)[0] == "TOOL_NOT_FOUND"


async def test_a_downstream_error_result_passes_unchanged(live_gateway, acme):
    async with live_gateway.session(acme.key) as session:
        failed = await session.call_tool("files__fail", {})
    assert failed.is_error
    assert failed.structured_content is None or "error" not in failed.structured_content


async def test_the_keys_rate_limit_holds(live_gateway, world):
    limited = await sync_to_async(world.new_key)(rate_limit=0.01, rate_burst=1)
    async with live_gateway.session(limited.key) as session:
        first = await session.call_tool("files__echo", {"text": "x"})
        refused = await session.call_tool("files__echo", {"text": "x"})
    assert text_of(first) == "x"
    code, text = error_of(refused)
    assert code == "RATE_LIMITED"
    assert text.startswith(
        "Error executing tool 'echo' in server 'files' (toolbox 'dev'): rate limit reached; "
    )


async def test_calls_are_in_the_call_log_as_use_tool(live_gateway, acme):
    async with live_gateway.session(acme.key) as session:
        await session.call_tool("files__echo", {"text": "logged"})
        await session.call_tool("limited__add", {})

    def rows() -> list[tuple[str, str, str, str, str]]:
        return list(
            CallRecord.objects.filter(key=acme.api_key)
            .order_by("at")
            .values_list("meta_tool", "toolbox", "server", "tool", "outcome")
        )

    await eventually(lambda: sync_to_async(lambda: len(rows()) == 2)(), 15, "2 call log rows")
    [echo, filtered] = await sync_to_async(rows)()
    assert echo == ("use_tool", "dev", "files", "echo", "ok")
    assert filtered[:4] == ("use_tool", "dev", "limited", "add")
    assert filtered[4] == "filtered"


async def read_error(session, uri: str) -> MCPError:
    try:
        await session.read_resource(uri)
    except MCPError as exc:
        return exc
    raise AssertionError(f"{uri} was read")


async def test_a_uri_a_result_handed_the_key_goes_to_its_server(live_gateway, world, acme):
    """The fixture server lists no resources: a URI of its result is asked of it all the
    same (its own answer, method not found, comes back), for this key only."""
    other = await sync_to_async(world.new_key)()
    async with live_gateway.session(acme.key) as session:
        mixed = await session.call_tool("files__mixed", {})
        links = [item.uri for item in mixed.content if isinstance(item, types.ResourceLink)]
        assert [str(uri) for uri in links] == ["file:///report.pdf"]
        asked = await read_error(session, "file:///report.pdf")
        embedded = await read_error(session, "file:///notes.txt")
    async with live_gateway.session(other.key) as session:
        refused = await read_error(session, "file:///report.pdf")
    assert asked.code == embedded.code == METHOD_NOT_FOUND  # the fixture server's answer
    assert (refused.code, refused.message) == (
        -32002,  # 2025-11-25's resource not found
        "Resource not found: file:///report.pdf",
    )


async def test_starting_the_toolboxs_servers_is_held_to_the_open_rate_limit(module_gateway, world):
    """A server that never starts is to be started on every request that needs the
    toolbox's servers (its initialize too): each is an open, and the key's open limit (one,
    then one per 100 s) refuses the second with open_toolbox's text."""
    limited = await sync_to_async(world.new_key)(open_rate_limit=0.01, open_rate_burst=1)
    broken = replace(
        module_gateway, url=module_gateway.url.rstrip("/") + "/t/acme/toolboxes/broken"
    )
    async with broken.session(limited.key) as session:  # its initialize: the first start
        assert session.initialize_result.instructions == "broken tools"
        try:
            await session.list_tools()
        except MCPError as exc:
            refused = exc
        else:
            raise AssertionError("the second start was not refused")
    assert refused.message.startswith("Error opening toolbox 'broken': rate limit reached; ")
    assert refused.error.data["code"] == "RATE_LIMITED"
    assert refused.error.data["retry_after"] > 0


async def test_a_held_tool_is_absent_and_refused(module_gateway, acme):
    held = replace(module_gateway, url=module_gateway.url.rstrip("/") + "/t/acme/toolboxes/held")
    async with held.session(acme.key) as session:
        listed = await session.list_tools()
        refused = await session.call_tool("guarded__echo", {"text": "x"})
    assert listed.tools == []
    assert error_of(refused) == (
        "TOOL_NOT_APPROVED",
        "Error executing tool: Tool 'echo' in server 'guarded' is waiting for an admin's approval",
    )
