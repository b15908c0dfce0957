"""Real published MCP servers behind the gateway, each in the sandbox (its seccomp filter
too): PyPI's mcp-server-time and mcp-server-git, npm's server-memory, server-filesystem
and server-everything (when Node is present)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings

from tests.harness.procs import processes_with, read_proc
from tests.harness.results import payload, text_of, use
from tests.harness.tenant_dirs import tenant_dir

# Between the gateway and its downstream servers (processes, networks): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

NODE_BIN = Path(__file__).resolve().parents[1] / "node_modules" / ".bin"
needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not (NODE_BIN / "mcp-server-memory").exists(),
    reason="Node or the npm test servers are missing (make test installs them when Node is "
    "present: npm ci --prefix tests)",
)


def seccomp_modes(setup, marker: str) -> list[str]:
    """The seccomp mode (/proc/<pid>/status) of each process of this tenant's uid running
    `marker`: 2 is a filter."""
    uid = str(settings.WORKBENCH_SANDBOX_UID_BASE + setup.tenant.pk)
    modes = []
    for pid in processes_with(marker):
        status = dict(
            line.split(":\t", 1)
            for line in read_proc(f"/proc/{pid}/status").splitlines()
            if ":\t" in line
        )
        if status.get("Uid", "").split("\t")[0] == uid:
            modes.append(status["Seccomp"])
    return modes


async def add_server(setup, toolbox, name, command, *args, **fields):
    server = await toolbox.servers.acreate(name=name, command=command, args=list(args), **fields)
    await sync_to_async(server.full_clean)()
    return server


async def test_time_and_git_from_pypi(live_gateway, amake_setup):
    setup = await amake_setup()
    repo = tenant_dir(setup.tenant.slug) / "repo"  # a directory its servers may be shown
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    toolbox = await setup.atoolbox("dev")
    await add_server(setup, toolbox, "time", sys.executable, "-m", "mcp_server_time", position=0)
    await add_server(
        setup,
        toolbox,
        "git",
        sys.executable,
        "-m",
        "mcp_server_git",
        "--repository",
        str(repo),
        position=1,
        tool_filters=["git_status", "git_log"],
    )
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        tools = [(tool["server"], tool["name"]) for tool in data["tools"]]
        assert tools[:2] == [("time", "get_current_time"), ("time", "convert_time")]
        assert tools[2:] == [("git", "git_status"), ("git", "git_log")]
        now = await session.call_tool(
            "use_tool", use("dev", "time", "get_current_time", {"timezone": "Etc/UTC"})
        )
        assert now.structured_content["timezone"] == "Etc/UTC"
        status = await session.call_tool(
            "use_tool", use("dev", "git", "git_status", {"repo_path": str(repo)})
        )
        assert "No commits yet" in text_of(status) or "branch" in text_of(status)
        # Argument validation is the downstream server's own.
        bad = await session.call_tool("use_tool", use("dev", "time", "get_current_time", {}))
        assert bad.is_error
        # Each answered from under the sandbox's seccomp filter.
        assert seccomp_modes(setup, "mcp_server_time") == ["2"]
        assert seccomp_modes(setup, "mcp_server_git") == ["2"]


@needs_node
async def test_memory_and_filesystem_from_npm(live_gateway, amake_setup):
    setup = await amake_setup()
    shown = tenant_dir(setup.tenant.slug)  # a directory its servers may be shown
    (shown / "hello.txt").write_text("hello from the filesystem server")
    # A writable mount must be writable by the tenant's own uid in the sandbox.
    os.chown(shown, settings.WORKBENCH_SANDBOX_UID_BASE + setup.tenant.pk, -1)
    toolbox = await setup.atoolbox("dev")
    await add_server(
        setup,
        toolbox,
        "memory",
        str(NODE_BIN / "mcp-server-memory"),
        env={"MEMORY_FILE_PATH": str(shown / "memory.jsonl")},
        mounts=[{"path": str(shown), "writable": True}],  # the sandbox shows only this
        position=0,
    )
    await add_server(
        setup,
        toolbox,
        "filesystem",
        str(NODE_BIN / "mcp-server-filesystem"),
        str(shown),
        position=1,
    )
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        servers = {tool["server"] for tool in data["tools"]}
        assert servers == {"memory", "filesystem"}
        created = await session.call_tool(
            "use_tool",
            use(
                "dev",
                "memory",
                "create_entities",
                {"entities": [{"name": "Ada", "entityType": "person", "observations": ["x"]}]},
            ),
        )
        assert not created.is_error, text_of(created)
        graph = await session.call_tool("use_tool", use("dev", "memory", "read_graph"))
        assert "Ada" in json.dumps(graph.model_dump(mode="json"))
        read = await session.call_tool(
            "use_tool",
            use("dev", "filesystem", "read_text_file", {"path": str(shown / "hello.txt")}),
        )
        assert "hello from the filesystem server" in text_of(read)
        assert seccomp_modes(setup, "mcp-server-memory") == ["2"]
        assert seccomp_modes(setup, "mcp-server-filesystem") == ["2"]


@needs_node
async def test_everything_from_npm_in_the_sandbox(live_gateway, amake_setup):
    """npm's server-everything over stdio, sandboxed (its seccomp filter too): it starts,
    lists its tools and answers (issue 31)."""
    setup = await amake_setup()
    toolbox = await setup.atoolbox("dev")
    everything = str(NODE_BIN / "mcp-server-everything")
    await add_server(setup, toolbox, "everything", everything, "stdio", tool_filters=["*"])
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        names = {tool["name"] for tool in data["tools"]}
        assert {"echo", "get-sum"} <= names, names
        echoed = await session.call_tool(
            "use_tool", use("dev", "everything", "echo", {"message": "hi"})
        )
        summed = await session.call_tool(
            "use_tool", use("dev", "everything", "get-sum", {"a": 2, "b": 3})
        )
        assert seccomp_modes(setup, "mcp-server-everything") == ["2"]
    assert "hi" in text_of(echoed)
    assert "5" in text_of(summed)
