"""Other clients than the Python SDK's on the toolbox endpoint, each the real one from
tests/node_modules: the TypeScript SDK's client (Streamable HTTP, the key in a header),
the MCP Inspector's CLI, and `mcp-remote` driven as Claude Desktop drives it (stdio on its
side, the endpoint over HTTP with the key header on the other)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.harness.live import LiveGateway
from tests.harness.paths import ROOT
from tests.harness.toolbox_world import NODE_BIN, endpoint, make_world, needs_node

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.once_pg,
    pytest.mark.xdist_group("toolbox_endpoint_clients"),
    needs_node,
]

INSPECTOR = NODE_BIN / "mcp-inspector"
MCP_REMOTE = NODE_BIN / "mcp-remote"
TS_CLIENT = ROOT / "tests" / "clients" / "ts_sdk_client.mjs"
RUN_SECONDS = 120  # Node's start and the toolbox's servers' (measured: seconds, under load)
DOCUMENT = "demo://resource/static/document/architecture.md"


@pytest.fixture(scope="module")
def world(module_db):
    return make_world()


@pytest.fixture
def acme(world):
    return world[0].new_key()


@pytest.fixture
def dev(module_gateway) -> LiveGateway:
    return endpoint(module_gateway, "acme", "dev")


async def run(*argv: str, env: dict[str, str]) -> Any:
    """Run a Node program to its end (bounded), in `env` only; its stdout's JSON."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ["PATH"], **env},
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), RUN_SECONDS)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, stderr.decode()
    return json.loads(stdout)


async def test_the_typescript_sdks_client_uses_every_list_and_call(dev, acme):
    seen = await run(
        shutil.which("node") or "node",
        str(TS_CLIENT),
        dev.url,
        "everything__echo",
        json.dumps({"message": "hello"}),
        DOCUMENT,
        "everything__completable-prompt",
        json.dumps({"department": "Sales", "name": "Eve"}),
        env={"WORKBENCH_KEY": acme.key},
    )
    async with dev.session(acme.key) as session:  # the Python SDK's view, to compare
        tools = (await session.list_tools()).tools
    assert seen["protocolVersion"] == "2025-11-25"
    assert seen["server"]["name"] == "workbench-toolbox"
    assert seen["instructions"].startswith("Development tools\n\n## everything\n\n")
    assert seen["tools"] == [
        tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools
    ]
    assert DOCUMENT in seen["resources"]
    assert "everything__completable-prompt" in seen["prompts"]
    assert seen["called"] == {
        "content": [{"type": "text", "text": "Echo: hello"}],
        "isError": False,
    }
    [content] = seen["read"]["contents"]
    assert (content["uri"], content["mimeType"]) == (DOCUMENT, "text/markdown")
    assert content["text"].startswith("# Everything Server")
    assert seen["prompt"]["messages"] == [
        {
            "role": "user",
            "content": {
                "type": "text",
                "text": "Please promote Eve to the head of the Sales team.",
            },
        }
    ]


@pytest.mark.skipif(not INSPECTOR.exists(), reason="npm's MCP Inspector is missing")
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_inspectors_cli_lists_tools_resources_and_prompts(dev, acme, tmp_path, era):
    """`mcp-inspector --cli <url> --method ...`, its own catalog and home in tmp_path."""
    env = {"HOME": str(tmp_path), "MCP_CATALOG_PATH": str(tmp_path / "mcp.json")}
    seen = {}
    for method in ("tools/list", "resources/list", "prompts/list"):
        seen[method] = await run(
            str(INSPECTOR),
            "--cli",
            dev.url,
            "--transport",
            "http",
            "--protocol-era",
            era,
            "--header",
            f"Authorization: Bearer {acme.key}",
            "--method",
            method,
            "--format",
            "json",
            "--quiet",
            env=env,
        )
    async with dev.session(acme.key) as session:  # the Python SDK's view, to compare
        tools = [tool.name for tool in (await session.list_tools()).tools]
    assert [tool["name"] for tool in seen["tools/list"]["result"]["tools"]] == tools
    resources = [r["uri"] for r in seen["resources/list"]["result"]["resources"]]
    assert DOCUMENT in resources
    assert [prompt["name"] for prompt in seen["prompts/list"]["result"]["prompts"]] == [
        "everything__simple-prompt",
        "everything__args-prompt",
        "everything__completable-prompt",
        "everything__resource-prompt",
    ]


@pytest.mark.skipif(not MCP_REMOTE.exists(), reason="npm's mcp-remote is missing")
async def test_mcp_remote_drives_the_endpoint_as_claude_desktop_would(dev, acme, tmp_path):
    """Claude Desktop's configuration for a remote server with a key: `mcp-remote <url>
    --header Authorization:${AUTH_HEADER}`, the key in the environment. The test speaks
    stdio MCP to it with the Python SDK's client; it speaks HTTP to the endpoint."""
    bridge = StdioServerParameters(
        command=str(MCP_REMOTE),
        args=[dev.url, "--header", "Authorization:${AUTH_HEADER}"],
        env={
            "PATH": os.environ["PATH"],
            "AUTH_HEADER": f"Bearer {acme.key}",
            "MCP_REMOTE_CONFIG_DIR": str(tmp_path),
        },
    )
    with anyio.fail_after(RUN_SECONDS):
        async with stdio_client(bridge) as (read, write), ClientSession(read, write) as session:
            initialized = await session.initialize()
            tools = (await session.list_tools()).tools
            called = await session.call_tool("everything__echo", {"message": "hello"})
    assert initialized.server_info.name == "workbench-toolbox"
    assert "everything__echo" in [tool.name for tool in tools]
    assert not called.is_error
    assert called.content == [types.TextContent(type="text", text="Echo: hello")]
