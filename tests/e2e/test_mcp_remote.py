"""`mcp-remote` (Claude Desktop's bridge), the real one from tests/node_modules, against a
real gateway: a good key lists the tools; a refused key ends its run at once with the key's
reason, and leaves no OAuth client behind.

On any 401 `mcp-remote` starts an OAuth sign-in: it registers a client and waits for a
browser. It sends its `--header` values to the registration endpoint too, which refuses a
request carrying a key, saying why /mcp refused it (accounts.oauth_clients): that refusal
is what it shows, before any client is registered."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from oauth2_provider.models import get_application_model

from tests.harness.paths import ROOT

pytestmark = pytest.mark.anyio

MCP_REMOTE = ROOT / "tests" / "node_modules" / ".bin" / "mcp-remote"
RUN_SECONDS = 60  # Node's start is most of it (measured 3-12 s)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
REFUSED = (
    "Dynamic Client Registration rejected (HTTP 401): "
    '{"error": "invalid_token", "error_description": "The API key has been revoked. A client '
    "that sends an API key does not register for OAuth: fix or replace the key, or remove "
    'the header to sign in with OAuth instead."}'
)


@pytest.fixture
def mcp_remote() -> Path:
    if shutil.which("node") is None or not MCP_REMOTE.exists():
        pytest.skip("Node or tests/node_modules/mcp-remote missing (make .venv/.test-installed)")
    return MCP_REMOTE


async def start(program: Path, url: str, key: str, home: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        str(program),
        url,
        "--header",
        f"Authorization:Bearer {key}",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ["PATH"], "MCP_REMOTE_CONFIG_DIR": str(home)},
    )


async def send(process: asyncio.subprocess.Process, message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    await process.stdin.drain()


async def answer(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), RUN_SECONDS)
    assert line, "mcp-remote closed its stdout"
    result: dict[str, Any] = json.loads(line)
    return result


def applications() -> int:
    return get_application_model().objects.count()


async def test_a_good_key_lists_the_tools(live_gateway, amake_setup, mcp_remote, tmp_path):
    setup = await amake_setup()
    process = await start(mcp_remote, live_gateway.url, setup.key, tmp_path)
    try:
        await send(process, INITIALIZE)
        assert (await answer(process))["result"]["serverInfo"]["name"] == "workbench"
        await send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        await send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = (await answer(process))["result"]["tools"]
        assert [tool["name"] for tool in tools] == ["open_toolbox", "use_tool", "search_tools"]
    finally:
        process.kill()
        await process.wait()


async def test_a_refused_key_ends_the_run_with_its_reason(
    live_gateway, amake_setup, mcp_remote, tmp_path
):
    setup = await amake_setup()
    await sync_to_async(setup.api_key.revoke)()
    before = await sync_to_async(applications)()
    process = await start(mcp_remote, live_gateway.url, setup.key, tmp_path)
    try:
        await send(process, INITIALIZE)  # stdin stays open: a client waiting for its answer
        assert process.stderr is not None
        stderr, _ = await asyncio.wait_for(
            asyncio.gather(process.stderr.read(), process.wait()), RUN_SECONDS
        )
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 1
    text = stderr.decode()
    assert f"Fatal error: RegistrationRejectedError: {REFUSED}" in text
    assert "Please authorize this client" not in text
    assert await sync_to_async(applications)() == before
