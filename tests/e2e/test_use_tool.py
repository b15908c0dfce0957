"""use_tool: the spec's checks in order, passthrough of results, downstream failures."""

import json
import uuid

import anyio
import mcp_types as types
import pytest

from tests.harness.procs import processes_with
from tests.harness.results import error_of, payload, text_of, use

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


async def test_a_timeout_edited_in_the_admin_applies_to_the_open_connection(
    live_gateway, amake_setup
):
    setup = await amake_setup()
    server = await setup.afixture_server(await setup.atoolbox("dev"), "slowpoke", timeout=600)
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        [connection] = live_gateway.gateway.pool.connections()
        server.timeout = 1
        await server.asave()
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
    open_toolboxes = live_gateway.gateway.open_toolboxes
    open_toolboxes.idle_seconds = 1
    # What a client opened is its key's, whatever session (or none) it came from.
    entry = open_toolboxes._entry(f"key:{dev.api_key.pk}", "dev")
    async with live_gateway.client(dev.key) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        ok = await client.call_tool("use_tool", use("dev", "filesystem", "echo", {"text": "x"}))
        assert text_of(ok) == "x"
        with anyio.fail_after(15):  # bounded wait for the store to drop the idle entry
            while await open_toolboxes.store.get(entry) is not None:
                await anyio.sleep(0.1)
        result = await client.call_tool("use_tool", use("dev", "filesystem", "echo"))
    assert error_of(result)[0] == "TOOLBOX_NOT_OPEN"


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
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool("use_tool", use("dev", "limited", "add", {"a": 1}))
    assert error_of(result) == (
        "TOOL_NOT_FOUND",
        "Error executing tool: Tool 'add' not found in server 'limited'",
    )


async def test_timeout(live_gateway, amake_setup):
    setup = await amake_setup()
    toolbox = await setup.atoolbox("dev")
    await setup.afixture_server(toolbox, "slowpoke", timeout=1)
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        result = await session.call_tool(
            "use_tool", use("dev", "slowpoke", "slow", {"seconds": 30})
        )
        assert error_of(result) == (
            "TIMEOUT",
            "Error executing tool 'slow' in server 'slowpoke' (toolbox 'dev'): timed out after 1s",
        )
        # The connection is still good for the next call.
        again = await session.call_tool("use_tool", use("dev", "slowpoke", "echo", {"text": "ok"}))
    assert text_of(again) == "ok"


async def test_crashed_server_gives_downstream_error_then_reconnects(live_gateway, amake_setup):
    marker = uuid.uuid4().hex
    setup = await amake_setup()
    toolbox = await setup.atoolbox("dev")
    await setup.afixture_server(toolbox, "fragile", "--prefix", marker)
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        [first_pid] = processes_with(marker)
        result = await session.call_tool("use_tool", use("dev", "fragile", "crash"))
        assert error_of(result) == (
            "DOWNSTREAM_ERROR",
            "Error executing tool 'crash' in server 'fragile' (toolbox 'dev'): "
            "the server connection closed",
        )
        again = await session.call_tool("use_tool", use("dev", "fragile", "echo", {"text": "back"}))
        assert text_of(again) == f"{marker}back"
        [second_pid] = processes_with(marker)
    assert second_pid != first_pid


async def test_calls_on_one_connection_run_concurrently(live_gateway, amake_setup):
    setup = await amake_setup()
    toolbox = await setup.atoolbox("dev")
    await setup.afixture_server(toolbox, "fixture")
    results = []
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)

        async def slow_call() -> None:
            results.append(
                await session.call_tool("use_tool", use("dev", "fixture", "slow", {"seconds": 1}))
            )

        # Ten one-second calls finish well inside ten seconds only if they overlap.
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                for _ in range(10):
                    group.start_soon(slow_call)
    assert [text_of(result) for result in results] == ["slept"] * 10


async def test_a_server_that_keeps_crashing_cools_down(live_gateway, amake_setup):
    from mcp_gateway.respawn import RespawnPolicy

    live_gateway.gateway.pool.respawn = RespawnPolicy(
        backoff_max=0.2, cooldown=60, failures_before_cooldown=3
    )
    marker = uuid.uuid4().hex
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "fragile", "--crash-on-call", "--prefix", marker)
    crash = use("dev", "fragile", "echo", {"text": "x"})
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        for _ in range(3):
            code, _ = error_of(await session.call_tool("use_tool", crash))
            assert code == "DOWNSTREAM_ERROR"
        code, text = error_of(await session.call_tool("use_tool", crash))
    assert code == "CONNECTION_FAILED"
    assert text == (
        "Error executing tool 'echo' in server 'fragile' (toolbox 'dev'): the server failed "
        "3 times in a row (last: the server connection closed); next attempt in 60s"
    )
    assert processes_with(marker) == []


async def test_downstream_protocol_error_is_wrapped(live_gateway, dev):
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        result = await session.call_tool("use_tool", use("dev", "filesystem", "explode"))
    assert error_of(result) == (
        "DOWNSTREAM_ERROR",
        "Error executing tool 'explode' in server 'filesystem' (toolbox 'dev'): kaboom",
    )


async def test_stderr_is_logged_with_its_server_named_and_bounded(live_gateway, dev, caplog):
    from mcp_gateway import stderr

    caplog.set_level("INFO", logger="workbench.downstream.stderr")
    async with live_gateway.session(dev.key) as session:
        await open_dev(session)
        budget_lines = stderr.BUDGET_BYTES_PER_MINUTE // 1000
        flood = {"lines": budget_lines * 3, "size": 1000}
        result = await session.call_tool("use_tool", use("dev", "filesystem", "shout", flood))
        assert text_of(result) == "shouted"
        long_line = {"lines": 1, "size": stderr.MAX_LINE * 3}
        await session.call_tool("use_tool", use("dev", "limited", "echo", {"text": "x"}))
        await session.call_tool("use_tool", use("dev", "filesystem", "shout", long_line))
    lines = [r.getMessage() for r in caplog.records if r.name == "workbench.downstream.stderr"]
    logged = [line for line in lines if line.startswith("[acme/dev/filesystem] xxx")]
    # The budget holds: about a minute's worth is logged, the rest dropped and counted.
    assert budget_lines // 2 < len(logged) <= budget_lines + 1
    assert all(len(line) <= len("[acme/dev/filesystem] ") + stderr.MAX_LINE for line in lines)
