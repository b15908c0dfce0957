"""use_tool: the spec's checks in order and passthrough of results, against one gateway
and one tenant's servers for the whole module (each test with a key of its own, so with
nothing open). Tests that change a connection or the gateway are in
test_use_tool_connections.py."""

import json

import anyio
import mcp_types as types
import pytest

from calls.models import CallRecord
from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.waits import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("use_tool")]


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    setup = make_tenant_setup()
    toolbox = setup.toolbox("dev")
    setup.fixture_server(toolbox, "filesystem", tool_filters=["*"])
    setup.fixture_server(toolbox, "limited", tool_filters=["echo"], position=1)
    return setup


@pytest.fixture
def dev(world) -> TenantSetup:
    """The module's tenant, with a key no other test used."""
    return world.new_key()


@pytest.fixture
def live_gateway(module_gateway) -> LiveGateway:
    return module_gateway


async def open_dev(session) -> None:
    payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))


async def test_calls_the_downstream_tool_by_its_original_name(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool(
            "use_tool", use("dev", "filesystem", "echo", {"text": "hi"})
        )
    assert not result.is_error
    assert text_of(result) == "hi"


async def test_arguments_default_to_empty(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool("use_tool", use("dev", "filesystem", "add"))
    assert result.structured_content == {"sum": 0}


async def test_structured_content_and_meta_pass_through(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool(
            "use_tool", use("dev", "filesystem", "add", {"a": 2, "b": 3})
        )
    assert result.structured_content == {"sum": 5}
    assert json.loads(text_of(result)) == {"sum": 5}
    assert result.meta == {"fixture/served-by": "fixture"}


async def test_image_content_passes_through(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool("use_tool", use("dev", "filesystem", "image"))
    [image] = result.content
    assert isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png"
    assert image.data.startswith("iVBORw0KGgo")


async def test_audio_resources_and_links_pass_through(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool("use_tool", use("dev", "filesystem", "mixed"))
    audio, text_resource, blob_resource, link = result.content
    assert isinstance(audio, types.AudioContent)
    assert (audio.data, audio.mime_type) == ("UklGRg==", "audio/wav")
    assert isinstance(text_resource, types.EmbeddedResource)
    assert text_resource.resource.text == "notes"
    assert str(text_resource.resource.uri) == "file:///notes.txt"
    assert isinstance(blob_resource, types.EmbeddedResource)
    assert blob_resource.resource.blob == "AAE="
    assert isinstance(link, types.ResourceLink)
    assert (str(link.uri), link.name) == ("file:///report.pdf", "report")


async def test_downstream_is_error_is_returned_as_it_came(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool("use_tool", use("dev", "filesystem", "fail"))
    assert result.is_error
    assert text_of(result) == "it failed"
    assert result.structured_content is None


async def test_progress_reaches_the_calling_client(live_gateway, dev):
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total, message))

    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool(
            "use_tool", use("dev", "filesystem", "progress"), progress_callback=on_progress
        )
    assert text_of(result) == "done"
    assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_progress_reaches_a_2026_client(live_gateway, dev):
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total, message))

    async with live_gateway.client(dev.key) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await client.call_tool(
            "use_tool", use("dev", "filesystem", "progress"), progress_callback=on_progress
        )
    assert text_of(result) == "done"
    assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_works_for_2026_clients(live_gateway, dev):
    async with live_gateway.client(dev.key) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await client.call_tool("use_tool", use("dev", "limited", "echo", {"text": "26"}))
    assert text_of(result) == "26"


async def test_the_error_table_holds_for_2026_clients(live_gateway, dev):
    async with live_gateway.client(dev.key) as client:
        not_open = await client.call_tool("use_tool", use("dev", "filesystem", "echo"))
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        results = [
            await client.call_tool("use_tool", arguments)
            for arguments in (
                {"tool": {"toolbox": "dev"}, "extra": 1},
                use("dev", "", "echo"),
                use("dev", "database", "echo"),
                use("dev", "limited", "add"),
            )
        ]
    assert [error_of(result) for result in [not_open, *results]] == [
        (
            "TOOLBOX_NOT_OPEN",
            "Error executing tool: Toolbox 'dev' is not open. Call open_toolbox first.",
        ),
        ("INVALID_PARAMETERS", "Invalid tool invocation parameters: Unrecognized key: 'extra'"),
        ("INVALID_PARAMETERS", "server: Server name cannot be empty"),
        ("SERVER_NOT_FOUND", "Error executing tool: Server 'database' not found in toolbox 'dev'"),
        ("TOOL_NOT_FOUND", "Error executing tool: Tool 'add' not found in server 'limited'"),
    ]


# The spec's error table, in its order of checks


INVALID_CASES = [
    ({}, "Invalid tool invocation parameters: tool is required"),
    (
        {"tool": "dev/filesystem/echo"},
        "Invalid tool invocation parameters: tool must be an object",
    ),
    (
        {"tool": {"toolbox": "dev", "server": "filesystem"}},
        "Invalid tool invocation parameters: tool.name is required",
    ),
    (
        {"tool": {"toolbox": "dev", "server": "filesystem", "name": 5}},
        "Invalid tool invocation parameters: tool.name must be a string",
    ),
    (
        {"tool": {"toolbox": "dev", "server": "filesystem", "name": "echo"}, "arguments": []},
        "Invalid tool invocation parameters: arguments must be an object",
    ),
    (
        {"tool": {"toolbox": "dev", "server": "filesystem", "name": "echo"}, "arguments": None},
        "Invalid tool invocation parameters: arguments must be an object",
    ),
    (
        {"tool": {"toolbox": "dev", "server": "filesystem", "name": "echo"}, "extra": 1},
        "Invalid tool invocation parameters: Unrecognized key: 'extra'",
    ),
    (
        {"tool": {"toolbox": "dev", "server": "filesystem", "name": "echo", "x": 1}},
        "Invalid tool invocation parameters: Unrecognized key: 'x' in tool",
    ),
    (
        {"toolbox_name": "dev", "tool_name": "echo"},
        "Invalid tool invocation parameters: Unrecognized key: 'toolbox_name'",
    ),
    (
        {"tool": {"toolbox": "dev", "source_server": "filesystem", "name": "echo"}},
        "Invalid tool invocation parameters: Unrecognized key: 'source_server' in tool",
    ),
    (use("", "", ""), "toolbox: Toolbox name cannot be empty"),
    (use("dev", " ", ""), "server: Server name cannot be empty"),
    (use("dev", "filesystem", ""), "name: Tool name cannot be empty"),
]


async def test_invalid_parameters(live_gateway, dev):
    # One session for every case: each is a separate call, its answer checked on its own.
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        answers = [
            error_of(await session.call_tool("use_tool", arguments))
            for arguments, _ in INVALID_CASES
        ]
    assert answers == [("INVALID_PARAMETERS", text) for _, text in INVALID_CASES]


async def test_toolbox_not_open_in_this_session(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        result = await session.call_tool(
            "use_tool", use("dev", "filesystem", "echo", {"text": "x"})
        )
    assert error_of(result) == (
        "TOOLBOX_NOT_OPEN",
        "Error executing tool: Toolbox 'dev' is not open. Call open_toolbox first.",
    )


async def test_unknown_toolbox_is_not_open(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        result = await session.call_tool("use_tool", use("nope", "filesystem", "echo"))
    assert error_of(result)[0] == "TOOLBOX_NOT_OPEN"


async def test_server_not_in_toolbox(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool("use_tool", use("dev", "database", "echo"))
    assert error_of(result) == (
        "SERVER_NOT_FOUND",
        "Error executing tool: Server 'database' not found in toolbox 'dev'",
    )


async def test_tool_not_offered(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool("use_tool", use("dev", "filesystem", "delete_all"))
    assert error_of(result) == (
        "TOOL_NOT_FOUND",
        "Error executing tool: Tool 'delete_all' not found in server 'filesystem'",
    )


async def test_filtered_out_tool_cannot_be_called(live_gateway, dev):
    """To the client, as a tool the server does not offer (the contract); in the call log,
    the admin reads that the server's filter refused it."""
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool("use_tool", use("dev", "limited", "add", {"a": 1}))
    assert error_of(result) == (
        "TOOL_NOT_FOUND",
        "Error executing tool: Tool 'add' not found in server 'limited'",
    )
    assert result.structured_content["error"]["details"] == {
        "toolbox": "dev",
        "server": "limited",
        "tool": "add",
    }
    rows = CallRecord.objects.filter(key_prefix=dev.api_key.prefix, meta_tool="use_tool")
    await eventually(rows.aexists, 15, "the call's row in the call log")
    row = await rows.aget()
    assert (row.toolbox, row.server, row.tool, row.outcome, row.error_code) == (
        "dev",
        "limited",
        "add",
        "filtered",
        "TOOL_NOT_FOUND",
    )


async def test_calls_on_one_connection_run_concurrently(live_gateway, dev):
    results = []
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)

        async def slow_call() -> None:
            results.append(
                await session.call_tool(
                    "use_tool", use("dev", "filesystem", "slow", {"seconds": 1})
                )
            )

        # Ten one-second calls finish well inside ten seconds only if they overlap.
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                for _ in range(10):
                    group.start_soon(slow_call)
    assert [text_of(result) for result in results] == ["slept"] * 10


async def test_downstream_protocol_error_is_wrapped(live_gateway, dev):
    """The server's exception (`kaboom`) is its own business: spoken to in 2026-07-28, an
    SDK server answers a handler's exception as a generic JSON-RPC error, its text what
    the client gets."""
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool("use_tool", use("dev", "filesystem", "explode"))
    assert error_of(result) == (
        "DOWNSTREAM_ERROR",
        "Error executing tool 'explode' in server 'filesystem' (toolbox 'dev'): "
        "Internal server error",
    )
