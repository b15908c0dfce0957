"""Remote downstreams: Streamable HTTP (with headers and ${VAR}) and SSE."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator

import anyio
import pytest
from asgiref.sync import sync_to_async

from tests.harness.net import free_port, listening
from tests.harness.paths import ROOT, SERVERS
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.waits import wait_until

# Between the gateway and its downstream servers (processes, networks): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

EVERYTHING = ROOT / "tests" / "node_modules" / ".bin" / "mcp-server-everything"


def start(command: list[str], port: int, env: dict[str, str] | None = None) -> subprocess.Popen:
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_until(lambda: listening(port) or process.poll() is not None, 30, f"port {port}")
    assert process.poll() is None, f"{command[0]} exited with {process.returncode}"
    return process


@pytest.fixture
def http_fixture() -> Iterator[int]:
    port = free_port()
    process = start(
        [sys.executable, str(SERVERS / "http_fixture.py"), "--port", str(port), "--prefix", "R:"],
        port,
    )
    yield port
    process.terminate()
    process.wait(timeout=15)


async def test_streamable_http_server_with_expanded_headers(
    live_gateway, amake_setup, http_fixture, monkeypatch
):
    monkeypatch.setenv("WORKBENCH_TEST_REMOTE_TOKEN", "t0ken")
    setup = await amake_setup()
    toolbox = await setup.atoolbox("dev")
    server = await toolbox.servers.acreate(
        name="remote",
        transport="streamable-http",
        url=f"http://127.0.0.1:{http_fixture}/mcp",
        headers={"Authorization": "Bearer ${WORKBENCH_TEST_REMOTE_TOKEN}", "X-Team": "blue"},
    )
    await sync_to_async(server.full_clean)()
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        assert data["tools"][0]["description"] == "R:Echo the text back"
        echoed = await session.call_tool("use_tool", use("dev", "remote", "echo", {"text": "x"}))
        seen = await session.call_tool("use_tool", use("dev", "remote", "headers"))
    assert text_of(echoed) == "R:x"
    headers = json.loads(text_of(seen))
    assert headers["authorization"] == "Bearer t0ken"
    assert headers["x-team"] == "blue"


async def test_refused_connection_is_a_clear_open_error(live_gateway, amake_setup):
    setup = await amake_setup()
    toolbox = await setup.atoolbox("dev")
    await toolbox.servers.acreate(
        name="gone", transport="streamable-http", url=f"http://127.0.0.1:{free_port()}/mcp"
    )
    async with live_gateway.session(setup.key) as session:
        code, text = error_of(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert code == "CONNECTION_FAILED"
    assert text == (
        "Error opening toolbox 'dev': Failed to connect to server 'gone' in toolbox 'dev': "
        "the server could not be reached"
    )


@pytest.mark.skipif(
    shutil.which("node") is None or not EVERYTHING.exists(),
    reason="Node or npm's server-everything is missing (make test installs it when Node is "
    "present)",
)
@pytest.mark.parametrize(
    ("mode", "transport", "path"),
    [("sse", "sse", "/sse"), ("streamableHttp", "streamable-http", "/mcp")],
)
async def test_server_everything_over_remote_transports(
    live_gateway, amake_setup, mode, transport, path
):
    port = free_port()
    process = start([str(EVERYTHING), mode], port, env={**os.environ, "PORT": str(port)})
    try:
        setup = await amake_setup()
        toolbox = await setup.atoolbox("dev")
        await toolbox.servers.acreate(
            name="everything",
            transport=transport,
            url=f"http://127.0.0.1:{port}{path}",
            tool_filters=["echo", "get-sum"],
        )
        async with live_gateway.session(setup.key) as session:
            data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            assert sorted(tool["name"] for tool in data["tools"]) == ["echo", "get-sum"]
            result = await session.call_tool(
                "use_tool", use("dev", "everything", "echo", {"message": "hi"})
            )
        assert "hi" in text_of(result)
    finally:
        process.terminate()
        process.wait(timeout=15)


def serve_in_thread(app) -> Iterator[int]:
    """A raw ASGI app on a free loopback port, for remotes that misbehave on purpose."""
    import threading

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, 10, "the misbehaving server to start")
    yield server.servers[0].sockets[0].getsockname()[1]
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def failing_server() -> Iterator[int]:
    """A remote that answers every request with HTTP 500."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b"internal error"})

    yield from serve_in_thread(app)


@pytest.fixture
def mute_sse_server() -> Iterator[int]:
    """An SSE remote that accepts the stream and never sends its `endpoint` event."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b": hello\n\n", "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass

    yield from serve_in_thread(app)


async def test_an_sse_server_that_never_sends_its_endpoint_is_bounded(
    live_gateway, amake_setup, mute_sse_server
):
    live_gateway.gateway.pool.connect_timeout = 2.0
    setup = await amake_setup()
    toolbox = await setup.atoolbox("dev")
    await toolbox.servers.acreate(
        name="mute", transport="sse", url=f"http://127.0.0.1:{mute_sse_server}/sse"
    )
    with anyio.fail_after(60):  # the SDK's own SSE read timeout would be 300 s
        async with live_gateway.session(setup.key) as session:
            result = await session.call_tool("open_toolbox", {"toolbox": "dev"})
    assert error_of(result) == (
        "CONNECTION_FAILED",
        "Error opening toolbox 'dev': Failed to connect to server 'mute' in toolbox 'dev': "
        "the server could not be reached",
    )


async def test_a_remote_answering_5xx_is_a_clear_open_error(
    live_gateway, amake_setup, failing_server
):
    setup = await amake_setup()
    toolbox = await setup.atoolbox("dev")
    await toolbox.servers.acreate(
        name="broken", transport="streamable-http", url=f"http://127.0.0.1:{failing_server}/mcp"
    )
    async with live_gateway.session(setup.key) as session:
        code, text = error_of(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert code == "CONNECTION_FAILED"
    assert text.startswith(
        "Error opening toolbox 'dev': Failed to connect to server 'broken' in toolbox 'dev': "
    )
    assert text.endswith("'broken' in toolbox 'dev': the server could not be reached")
