"""use_tool: the spec's checks in order, passthrough of results, downstream failures."""

import json

import anyio
import mcp_types as types
import pytest

from tests.e2e.helpers import error_of, payload, text_of, use

pytestmark = pytest.mark.anyio


@pytest.fixture
def dev(make_setup):
    setup = make_setup()
    toolbox = setup.toolbox("dev")
    setup.fixture_server(toolbox, "filesystem", tool_filters=["*"])
    setup.fixture_server(toolbox, "limited", tool_filters=["echo"], position=1)
    return setup


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


async def test_a_timeout_edited_in_the_admin_applies_to_the_open_connection(
    live_gateway, make_setup
):
    setup = make_setup()
    server = setup.fixture_server(setup.toolbox("dev"), "slowpoke", timeout=600)
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        [connection] = live_gateway.gateway.pool.connections()
        server.timeout = 1
        server.save()
        result = await session.call_tool(
            "use_tool", use("dev", "slowpoke", "slow", {"seconds": 30})
        )
        assert error_of(result) == (
            "TIMEOUT",
            "Error executing tool 'slow' in server 'slowpoke' (toolbox 'dev'): timed out after 1s",
        )
        # Same process: a timeout is not part of what a connection is made from.
        assert live_gateway.gateway.pool.connections() == [connection]


async def test_open_toolboxes_expire_after_the_idle_time(live_gateway, dev):
    from mcp_gateway import store

    sessions = live_gateway.gateway.sessions
    sessions.idle_seconds = 1
    # A 2026 client has no session id: what it opened is its key's.
    entry = sessions._entry(dev.api_key.pk, None, "dev")
    async with live_gateway.client(dev.key) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        ok = await client.call_tool("use_tool", use("dev", "filesystem", "echo", {"text": "x"}))
        assert text_of(ok) == "x"
        with anyio.fail_after(15):  # bounded wait for the store to drop the idle entry
            while await store.get(entry) is not None:
                await anyio.sleep(0.1)
        result = await client.call_tool("use_tool", use("dev", "filesystem", "echo"))
    assert error_of(result)[0] == "TOOLBOX_NOT_OPEN"
