"""Open: `open_toolbox` on a toolbox of 4 real stdio servers, cold and warm, against the
slowest of the 4 started alone.

    .venv/bin/python bench/open.py [--reps 5] [--warm 30] [--quick]

Servers: PyPI's mcp-server-time and mcp-server-git, npm's server-memory and
server-filesystem (tests/node_modules; without Node, a second time and git server stand in).
- alone: each server spawned, initialized and its tools listed by the SDK's stdio client
  directly (what the gateway does to connect one), one after another; the slowest counts.
- cold: a new session's `open_toolbox` on a toolbox whose processes are not started (each
  repetition opens a toolbox of its own, `cold1`, `cold2`, ..., with the same 4 servers).
- warm: a new session's first `open_toolbox` on a toolbox already open in another session
  of the tenant (its processes running).
Each repetition measures the 4 servers alone and then one cold open, so drift hits both;
the ratio is the median of the per-repetition ratios.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    NODE_BIN,
    Row,
    StdioServer,
    arguments,
    check,
    checked,
    cpu_seconds,
    gateway,
    gateway_session,
    http_session,
    median,
    ms,
    p50_p90_p99,
    report,
    sdk_server,
    time_server,
    timed,
)
from mcp_gateway import SandboxPolicy, SandboxSpec, sandbox_launch

SECTION = "2 open"
SANDBOX_POLICY = SandboxPolicy()  # bwrap, the default limits
BASE_ENV = ("PATH", "HOME", "LANG")  # what the gateway gives a stdio server besides its env


def four_servers(workdir: Path) -> tuple[list[StdioServer], str]:
    """The toolbox's servers, and a note when Node's servers are not available."""
    repo = workdir / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    git = StdioServer("git", sys.executable, ("-m", "mcp_server_git", "--repository", str(repo)))
    if shutil.which("node") and (NODE_BIN / "mcp-server-memory").exists():
        memory = StdioServer(
            "memory",
            str(NODE_BIN / "mcp-server-memory"),
            env={"MEMORY_FILE_PATH": str(workdir / "memory.jsonl")},
        )
        files = StdioServer("filesystem", str(NODE_BIN / "mcp-server-filesystem"), (str(workdir),))
        return [time_server(), git, memory, files], ""
    again = StdioServer("git2", git.command, git.args)
    return [time_server(), git, time_server("time2"), again], " (Node missing: time, git twice)"


async def start_alone(
    server: StdioServer, sandboxed: bool = False, roots: tuple[str, ...] = ()
) -> float:
    """Seconds to spawn, initialize and list the tools of one server, as the gateway does
    (sandboxed: in the gateway's bubblewrap sandbox, with its default limits, shown the
    paths its args name under `roots`)."""
    env = {name: os.environ[name] for name in BASE_ENV if name in os.environ} | server.env
    params = StdioServerParameters(command=server.command, args=list(server.args), env=env)
    if sandboxed:
        launch = sandbox_launch(
            server.command, server.args, env, None, SandboxSpec(roots=roots), SANDBOX_POLICY
        )
        params = StdioServerParameters(command=launch.argv[0], args=launch.argv[1:], env=launch.env)
    start = time.perf_counter()
    with (
        open(os.devnull, "w") as errlog,
        anyio.fail_after(60),
    ):
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            cursor: str | None = None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                cursor = (await session.list_tools(params=params)).next_cursor
                if not cursor:
                    break
            elapsed = time.perf_counter() - start
    return elapsed


@dataclass
class Figures:
    alone: dict[str, list[float]]  # per server, its start times alone (s)
    sandboxed: dict[str, list[float]] = field(default_factory=dict)  # the same, in the sandbox
    at_once: list[float] = field(default_factory=list)  # all started together, directly (s)
    cold: list[float] = field(default_factory=list)  # cold opens (s)
    warm: list[float] = field(default_factory=list)  # warm opens, a new session's (ms)
    warm_same: list[float] = field(default_factory=list)  # then again in that session (ms)
    listing: list[float] = field(default_factory=list)  # a bare tools/list (ms)
    tools: int = 0  # tools in the opened toolbox
    answer: str = ""  # a warm open's text
    floor: list[float] = field(default_factory=list)  # the SDK alone sending it (ms)
    floor_cpu: float = 0.0  # the SDK server's CPU per call sending it (ms)


async def start_at_once(servers: list[StdioServer]) -> float:
    """Seconds to start every server together, directly: what the machine allows a cold
    open (servers' starts are CPU-bound; on 2 cores, 4 of them queue for the CPU)."""
    start = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for server in servers:
            tasks.start_soon(start_alone, server)
    return time.perf_counter() - start


async def measure(
    url: str, key: str, servers: list[StdioServer], reps: int, warm: int, roots: tuple[str, ...]
) -> Figures:
    figures = Figures({server.name: [] for server in servers})
    for rep in range(1, reps + 1):
        for server in servers:
            figures.alone[server.name].append(await start_alone(server))
            figures.sandboxed.setdefault(server.name, []).append(
                await start_alone(server, sandboxed=True, roots=roots)
            )
        figures.at_once.append(await start_at_once(servers))
        async with gateway_session(url, key, open_toolbox=None) as session:
            start = time.perf_counter()
            with anyio.fail_after(120):
                opened = checked(await session.call_tool("open_toolbox", {"toolbox": f"cold{rep}"}))
            figures.cold.append(time.perf_counter() - start)
            result = opened.structured_content or {}
            if result.get("servers_connected") != len(servers):
                raise RuntimeError(f"not every server connected: {result}")
            figures.tools = len(result["tools"])
    async with gateway_session(url, key, open_toolbox="cold1"):  # open elsewhere in the tenant
        for _ in range(warm):
            async with gateway_session(url, key, open_toolbox=None) as session:
                figures.warm += await timed(lambda: _open(session, "cold1"), 1)
                figures.warm_same += await timed(lambda: _open(session, "cold1"), 1)
                figures.listing += await timed(session.list_tools, 1)
        async with gateway_session(url, key, open_toolbox=None) as session:
            opened = await _open(session, "cold1")
            figures.answer = opened.content[0].text  # type: ignore[union-attr]
    return figures


async def sdk_floor(url: str, pid: int, figures: Figures, count: int) -> None:
    """The same answer sent by the SDK alone (bench/sdk_server.py --json --answer): what
    the SDK's server and client cost to carry it, whoever made it."""
    async with http_session(url) as session:
        await _answer(session)  # warm-up
        cpu = -cpu_seconds([pid])
        for _ in range(count):
            figures.floor += await timed(lambda: _answer(session), 1)
        figures.floor_cpu = (cpu + cpu_seconds([pid])) * 1000 / count


async def _answer(session: ClientSession) -> object:
    return checked(await session.call_tool("answer", {}))


async def _open(session: ClientSession, toolbox: str) -> types.CallToolResult:
    return checked(await session.call_tool("open_toolbox", {"toolbox": toolbox}))


def rows(figures: Figures, note: str) -> list[Row]:
    alone, cold, warm = figures.alone, figures.cold, figures.warm
    per_rep_slowest = [max(times) for times in zip(*alone.values(), strict=True)]
    slowest = max(alone, key=lambda name: median(alone[name]))
    return [
        Row(
            SECTION,
            "each server alone: median start (ms)",
            ", ".join(f"{name} {median(times) * 1000:.0f}" for name, times in alone.items()),
        ),
        Row(
            SECTION,
            "each server alone in the bwrap sandbox: median start (ms; added)",
            ", ".join(
                f"{name} {median(times) * 1000:.0f} "
                f"({(median(times) - median(alone[name])) * 1000:+.0f})"
                for name, times in figures.sandboxed.items()
            ),
        ),
        Row(
            SECTION,
            f"cold open of {len(alone)} servers{note}: median (ms, {len(cold)} runs)",
            f"{median(cold) * 1000:.0f}",
        ),
        check(
            SECTION,
            f"cold open / slowest alone ({slowest}), median of per-run ratios",
            median([c / s for c, s in zip(cold, per_rep_slowest, strict=True)]),
            1.1,
        ),
        Row(
            SECTION,
            "reference: all started at once directly, median (ms); cold open / that",
            f"{median(figures.at_once) * 1000:.0f}; "
            f"{median([c / a for c, a in zip(cold, figures.at_once, strict=True)]):.2f}",
        ),
        Row(
            SECTION,
            f"warm open ({figures.tools} tools): p50 / p90 / p99 (ms, {len(warm)} opens)",
            ms(p50_p90_p99(warm)),
        ),
        check(SECTION, "warm open p50, from a new session", p50_p90_p99(warm)[0], 3, unit=" ms"),
        check(
            SECTION,
            "warm open p50, again from the same session",
            p50_p90_p99(figures.warm_same)[0],
            3,
            unit=" ms",
        ),
        Row(
            SECTION,
            "reference: a bare tools/list through the gateway, p50 (ms)",
            f"{p50_p90_p99(figures.listing)[0]:.2f}",
        ),
        Row(
            SECTION,
            f"floor: the SDK alone sending the same answer ({len(figures.answer)} characters of "
            "text, and as structuredContent): p50 (ms); its server's CPU per call (ms)",
            f"{p50_p90_p99(figures.floor)[0]:.2f}; {figures.floor_cpu:.2f}",
        ),
    ]


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--servers", type=int, default=4, help="only the first N of the 4")
    options = parser.parse_args()
    if options.quick:
        options.reps, options.warm, options.servers = 1, 3, 1
    with tempfile.TemporaryDirectory(prefix="wb-bench-open-") as workdir:
        # The servers' repository and directory: a tenant root the sandbox may show (its
        # uids must be able to enter it).
        os.chmod(workdir, 0o755)
        servers, note = four_servers(Path(workdir))
        servers = servers[: options.servers]
        toolboxes = {f"cold{rep}": servers for rep in range(1, options.reps + 1)}
        shown = {"WORKBENCH_SANDBOX_TENANT_ROOT": workdir}
        with gateway(toolboxes, env=shown) as running:
            figures = anyio.run(
                measure,
                running.url,
                running.key,
                servers,
                options.reps,
                options.warm,
                (os.path.realpath(workdir),),
            )
        answer = Path(workdir) / "answer.json"
        answer.write_text(figures.answer)
        with sdk_server("--json", "--answer", str(answer)) as (url, sdk):
            anyio.run(sdk_floor, url, sdk.pid, figures, options.warm)
    title = (
        f"Open: {options.reps} cold opens of a toolbox of {len(servers)} stdio servers, "
        f"{options.warm} warm opens"
    )
    report(rows(figures, note), options.json, title)


if __name__ == "__main__":
    main()
