"""Downstream faults: hangs, garbage, huge results, cancellation, idle connections."""

import os
import time
import uuid
from pathlib import Path

import anyio
import httpx2
import pytest
from django.conf import settings

from tests.harness.live import TenantSetup
from tests.harness.net import free_port, listening
from tests.harness.paths import SERVERS
from tests.harness.procs import processes_with
from tests.harness.results import error_of, payload, raw_rpc, text_of, use
from tests.harness.tenant_dirs import tenant_dir
from tests.harness.waits import eventually, wait_until

# Between the gateway and its downstream servers (processes, networks): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]


async def open_dev(session) -> dict:
    return payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))


def in_flight(live_gateway) -> int:
    """Calls the gateway has sent downstream and not yet had answered."""
    return sum(c.in_flight for c in live_gateway.gateway.pool.connections())


async def until_a_call_reaches_its_server(live_gateway) -> None:
    await eventually(lambda: in_flight(live_gateway) > 0, 10, "the call to reach its server")


async def test_a_hung_call_does_not_hold_up_other_calls(live_gateway, amake_setup):
    import signal

    marker = uuid.uuid4().hex
    setup = await amake_setup()
    toolbox = await setup.atoolbox("dev")
    await setup.afixture_server(toolbox, "stuck", "--prefix", marker, position=0, timeout=60)
    await setup.afixture_server(toolbox, "healthy", position=1)
    order: list[str] = []
    hung: list[object] = []
    async with (
        live_gateway.session(setup.key) as session,
        live_gateway.session(setup.key) as other_session,
    ):
        await open_dev(session)
        await open_dev(other_session)

        async def hang() -> None:
            call = use("dev", "stuck", "slow", {"seconds": 60})
            hung.append(await session.call_tool("use_tool", call))
            order.append("hang")

        async def echo(client, index: int) -> None:
            result = await client.call_tool(
                "use_tool", use("dev", "healthy", "echo", {"text": str(index)})
            )
            assert text_of(result) == str(index)
            order.append("echo")

        with anyio.fail_after(30):  # far less than the hung call's own 60 s
            async with anyio.create_task_group() as group:
                group.start_soon(hang)
                await until_a_call_reaches_its_server(live_gateway)
                async with anyio.create_task_group() as echoes:
                    for index in range(20):  # on the hung call's session and on another one
                        echoes.start_soon(echo, session if index % 2 else other_session, index)
                # Every other call finished while the hung one is still waiting.
                assert order == ["echo"] * 20
                # Ended from the server's side, not cancelled here: the SDK's client may
                # fail to close a session while a cancelled call's answer is on its way.
                [pid] = processes_with(marker)
                os.kill(pid, signal.SIGKILL)
    assert order == ["echo"] * 20 + ["hang"]
    assert error_of(hung[0])[0] == "DOWNSTREAM_ERROR"


async def test_garbage_on_stdout_is_skipped(live_gateway, amake_setup):
    setup = await amake_setup()
    await setup.afixture_server(await setup.atoolbox("dev"), "noisy", "--garbage-at-start")
    async with live_gateway.session(setup.key) as session:
        assert (await open_dev(session))["servers_connected"] == 1
        result = await session.call_tool("use_tool", use("dev", "noisy", "garbage"))
        assert text_of(result) == "after garbage"
        again = await session.call_tool("use_tool", use("dev", "noisy", "echo", {"text": "ok"}))
    assert text_of(again) == "ok"


async def test_a_result_over_the_size_limit_is_a_clear_error(live_gateway, amake_setup):
    live_gateway.gateway.pool.max_result_bytes = 100_000
    setup = await amake_setup()
    await setup.afixture_server(await setup.atoolbox("dev"), "big")
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        small = await session.call_tool("use_tool", use("dev", "big", "big", {"size": 90_000}))
        huge = await session.call_tool("use_tool", use("dev", "big", "big", {"size": 2_000_000}))
        again = await session.call_tool("use_tool", use("dev", "big", "big", {"size": 10}))
    assert len(text_of(small)) == 90_000
    code, text = error_of(huge)
    assert code == "DOWNSTREAM_ERROR"
    # Cut off as it was read (the size counts the message's JSON envelope too), never kept.
    prefix = "Error executing tool 'big' in server 'big' (toolbox 'dev'): the result is too large ("
    assert text.startswith(prefix) and text.endswith(" bytes; the limit is 100000)"), text
    assert 2_000_000 < int(text.removeprefix(prefix).split()[0]) < 2_001_000
    assert text_of(again) == "x" * 10  # the connection is still good


@pytest.fixture
def shown_dir() -> Path:
    """A directory a sandbox may be shown (pytest's tmp_path lies below a 0700 one)."""
    return tenant_dir("acme")


def sandbox_writable(path: Path, setup: TenantSetup) -> list[dict[str, object]]:
    """A writable sandbox mount of `path` (for the marker files), owned by the tenant's uid."""
    os.chown(path, settings.WORKBENCH_SANDBOX_UID_BASE + setup.tenant.pk, -1)
    return [{"path": str(path), "writable": True}]


async def test_a_client_that_goes_away_cancels_the_downstream_call(
    live_gateway, amake_setup, shown_dir
):
    marker = shown_dir / "cancelled"
    setup = await amake_setup()
    await setup.afixture_server(
        await setup.atoolbox("dev"), "waiter", mounts=sandbox_writable(shown_dir, setup)
    )
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        # Opened under the key's own session too, for the raw request below.
    async with httpx2.AsyncClient(timeout=30) as http:
        opened = await raw_rpc(
            http,
            live_gateway.url,
            "tools/call",
            {"name": "open_toolbox", "arguments": {"toolbox": "dev"}},
            key=setup.key,
            headers={"MCP-Protocol-Version": "2025-11-25"},
        )
        assert opened.status_code == 200
        call = use("dev", "waiter", "wait_cancel", {"marker": str(marker)})
        started = shown_dir / "cancelled.started"
        async with anyio.create_task_group() as group:

            async def call_then_go_away() -> None:
                await raw_rpc(
                    http,
                    live_gateway.url,
                    "tools/call",
                    {"name": "use_tool", "arguments": call},
                    key=setup.key,
                    headers={"MCP-Protocol-Version": "2025-11-25"},
                )

            group.start_soon(call_then_go_away)
            await eventually(started.exists, 15, "the downstream call to start")
            group.cancel_scope.cancel()  # the client gives up and disconnects
    wait_until(marker.exists, 15, "the downstream call to be cancelled")
    wait_until(
        lambda: in_flight(live_gateway) == 0,
        15,
        "no call to be left in flight",
    )


async def test_idle_connections_close_and_reopen_on_demand(live_gateway, amake_setup):
    marker = uuid.uuid4().hex
    setup = await amake_setup()
    await setup.afixture_server(await setup.atoolbox("dev"), "fixture", "--prefix", marker)
    pool = live_gateway.gateway.pool
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        assert len(processes_with(marker)) == 1
        pool.reap(now=time.monotonic() + pool.idle_seconds + 1)
        wait_until(lambda: processes_with(marker) == [], 15, "the idle server to be closed")
        result = await session.call_tool("use_tool", use("dev", "fixture", "echo", {"text": "!"}))
        assert text_of(result) == f"{marker}!"
        assert len(processes_with(marker)) == 1


async def test_a_servers_own_idle_time_overrides_the_gateways(live_gateway, amake_setup):
    brief, plain = uuid.uuid4().hex, uuid.uuid4().hex
    setup = await amake_setup()
    toolbox = await setup.atoolbox("dev")
    await setup.afixture_server(toolbox, "brief", "--prefix", brief, idle_timeout=30)
    await setup.afixture_server(toolbox, "plain", "--prefix", plain, position=1)
    pool = live_gateway.gateway.pool
    assert pool.idle_seconds > 60
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        pool.reap(now=time.monotonic() + 31)
        await eventually(lambda: processes_with(brief) == [], 15, "the brief server to close")
        assert len(processes_with(plain)) == 1  # still within the gateway's idle time
        result = await session.call_tool("use_tool", use("dev", "brief", "echo", {"text": "!"}))
        assert text_of(result) == f"{brief}!"


async def test_a_killed_server_fails_calls_in_flight_at_once_then_respawns(
    live_gateway, amake_setup
):
    import os
    import signal

    marker = uuid.uuid4().hex
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "victim", "--prefix", marker, timeout=600)
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        [pid] = processes_with(marker)
        results = []

        async def long_call() -> None:
            call = use("dev", "victim", "slow", {"seconds": 600})
            results.append(await session.call_tool("use_tool", call))

        with anyio.fail_after(30):  # far less than the call's own 600 s timeout
            async with anyio.create_task_group() as group:
                group.start_soon(long_call)
                await until_a_call_reaches_its_server(live_gateway)
                os.kill(pid, signal.SIGKILL)
        assert error_of(results[0]) == (
            "DOWNSTREAM_ERROR",
            "Error executing tool 'slow' in server 'victim' (toolbox 'dev'): "
            "the server connection closed",
        )
        again = await session.call_tool("use_tool", use("dev", "victim", "echo", {"text": "!"}))
        assert text_of(again) == f"{marker}!"


async def test_a_remote_server_that_drops_mid_call(live_gateway, amake_setup):
    import subprocess
    import sys

    port = free_port()
    command = [sys.executable, str(SERVERS / "http_fixture.py"), "--port", str(port)]

    def start() -> subprocess.Popen:
        process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
        wait_until(lambda: listening(port), 30, "the remote fixture to listen")
        return process

    remote = start()
    try:
        setup = await amake_setup()
        await (await setup.atoolbox("dev")).servers.acreate(
            name="remote", transport="streamable-http", url=f"http://127.0.0.1:{port}/mcp"
        )
        async with live_gateway.session(setup.key) as session:
            await open_dev(session)
            results = []

            async def long_call() -> None:
                call = use("dev", "remote", "slow", {"seconds": 600})
                results.append(await session.call_tool("use_tool", call))

            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    group.start_soon(long_call)
                    await until_a_call_reaches_its_server(live_gateway)
                    remote.kill()
                    remote.wait(timeout=10)
            code, text = error_of(results[0])
            assert code == "DOWNSTREAM_ERROR"
            assert text.startswith(
                "Error executing tool 'slow' in server 'remote' (toolbox 'dev'): "
            )
            remote = start()  # back again: the next call goes through
            again = await session.call_tool("use_tool", use("dev", "remote", "echo", {"text": "b"}))
            assert text_of(again) == "b"
    finally:
        remote.kill()
        remote.wait(timeout=10)


async def test_a_server_that_dies_while_idle_is_replaced_on_the_next_call(
    live_gateway, amake_setup
):
    import os
    import signal

    marker = uuid.uuid4().hex
    setup = await amake_setup()
    await setup.afixture_server(await setup.atoolbox("dev"), "fragile", "--prefix", marker)
    pool = live_gateway.gateway.pool
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        [pid] = processes_with(marker)
        [first] = pool.connections()
        os.kill(pid, signal.SIGKILL)  # no call in flight: only the stream's end tells
        await eventually(lambda: first.closed, 15, "the dead connection to be noticed")
        result = await session.call_tool("use_tool", use("dev", "fragile", "echo", {"text": "!"}))
        assert text_of(result) == f"{marker}!"
        [new_pid] = processes_with(marker)
        assert new_pid != pid
        # Opening again lists the new connection's tools, not the dead one's.
        assert [c for c in pool.connections() if c is first] == []


async def test_a_client_that_cancels_its_call_cancels_the_downstream_call(
    live_gateway, amake_setup, shown_dir
):
    marker = shown_dir / "cancelled"
    started = shown_dir / "cancelled.started"
    setup = await amake_setup()
    await setup.afixture_server(
        await setup.atoolbox("dev"), "waiter", mounts=sandbox_writable(shown_dir, setup)
    )
    async with live_gateway.session(setup.key) as session:
        await open_dev(session)
        call = use("dev", "waiter", "wait_cancel", {"marker": str(marker)})
        async with anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "use_tool", call)
            await eventually(started.exists, 15, "the downstream call to start")
            group.cancel_scope.cancel()  # the SDK client cancels the request
        await eventually(marker.exists, 15, "the downstream call to be cancelled")
        # The session goes on working after the cancellation.
        result = await session.call_tool("use_tool", use("dev", "waiter", "echo", {"text": "!"}))
        assert text_of(result) == "!"
    await eventually(
        lambda: in_flight(live_gateway) == 0,
        15,
        "no call to be left in flight",
    )
