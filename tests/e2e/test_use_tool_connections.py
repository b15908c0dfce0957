"""use_tool over connections that change: a timeout edited, an idle toolbox expiring,
timeouts, crashes and respawn cool-down, the stderr budget. Each test has a gateway of its
own (these change the pool, the open-state store or a server's budget)."""

import uuid

import anyio
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


async def test_a_server_that_keeps_crashing_cools_down(live_gateway, amake_setup):
    from mcp_gateway.downstream.respawn import RespawnPolicy

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


async def test_stderr_is_logged_with_its_server_named_and_bounded(live_gateway, dev, caplog):
    from mcp_gateway.downstream import stderr

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
