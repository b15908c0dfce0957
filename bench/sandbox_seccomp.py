"""What the sandbox's seccomp filter costs: a sandbox's start with the filter and without,
and a system call made inside.

    .venv/bin/python bench/sandbox_seccomp.py [--rounds 20] [--quick]

- empty sandbox: `/bin/true` in a sandbox (`open_sandboxed`, network off), from the spawn
  to its exit: the filter's whole cost at start
  (exported once per process, then bound into the sandbox, opened by the handover shell,
  read and installed by the inner bubblewrap), without a server's own start to hide it;
- a sandboxed `python -c "import mcp.server.stdio, pydantic"` to its exit, and the CPU
  time it reports of itself: a server's start-up (thousands of system calls, each through
  the filter);
- spawn: `python -m mcp_server_time` and, when Node and the npm test servers are there,
  npm's `mcp-server-memory`, started through the gateway's own stdio client
  (`bounded_stdio_client`, the command line from `sandbox_launch`, as
  downstream/transports.py builds it), initialized and called once, timed from the spawn
  to the call's answer, with the CPU time its processes took by then (/proc);
- a system call: `getppid` a million times in a sandboxed Python, time per call: what
  the kernel's seccomp path adds to every call (the filter's verdict for a call it always
  allows is cached, so this is the cost of having a filter at all).

Each pair takes turns, the order alternating each round; "adds" is the median over
rounds of the per-round difference. Needs root (bubblewrap as the gateway runs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    TIME_ARGS,
    TIME_MODULE,
    Row,
    arguments,
    checked,
    cpu_seconds,
    descendants,
    gateway_sandbox_policy,
    gateway_stdio_session,
    median,
    report,
)

SECTION = "12 sandbox seccomp"
NODE_MEMORY = Path(__file__).resolve().parents[1] / "tests" / "node_modules" / ".bin"
SYSCALLS = 1_000_000
GETPPID = (
    "import os, time\n"
    f"n = {SYSCALLS}\n"
    "start = time.perf_counter_ns()\n"
    "for _ in range(n): os.getppid()\n"
    "print((time.perf_counter_ns() - start) / n)\n"
)


def policies(policy: Any) -> dict[bool, Any]:
    return {True: policy, False: replace(policy, seccomp=False)}


# What one measure returns: its figures by name (with the unit), e.g. {"wall (ms)": 12.3}.
Figures = dict[str, float]
WALL, PER_CALL = "start to exit (ms)", "per call (ns)"
OWN_CPU = "its own CPU time (ms)"
SERVER_CPU = "CPU time of its processes until the answer (ms)"
# The CPU time a sandboxed process reports of itself at its exit. (Not the bench's
# RUSAGE_CHILDREN: bubblewrap's monitor ends without reaping the sandbox's pid 1, whose
# processes' time is then counted nowhere.)
IMPORTS = (
    "import resource, mcp.server.stdio, pydantic\n"
    "used = resource.getrusage(resource.RUSAGE_SELF)\n"
    "print((used.ru_utime + used.ru_stime) * 1000)\n"
)


async def sandboxed(policy: Any, command: str, args: list[str]) -> tuple[float, str]:
    """Milliseconds from the spawn of `command` in a sandbox (network off) to its exit,
    and what it printed."""
    from mcp_gateway import SandboxSpec, open_sandboxed, sandbox_launch

    spec = SandboxSpec(owner=1, network=False)
    launched = sandbox_launch(command, args, {"PATH": "/usr/bin:/bin"}, None, spec, policy)
    start = time.perf_counter()
    process, started = await open_sandboxed(
        launched.argv, launched.env, subprocess.DEVNULL, spec, policy
    )
    assert process.stdout is not None
    said = b"".join([chunk async for chunk in process.stdout])
    await process.wait()
    elapsed = (time.perf_counter() - start) * 1000
    await started.close()
    if process.returncode != 0:
        raise RuntimeError(f"{command} in the sandbox exited with {process.returncode}")
    return elapsed, said.decode()


async def empty_sandbox(policy: Any) -> Figures:
    """An empty sandbox (`/bin/true`) from its spawn to its exit."""
    elapsed, _ = await sandboxed(policy, "/bin/true", [])
    return {WALL: elapsed}


async def python_imports(policy: Any) -> Figures:
    """A sandboxed Python importing what an MCP server does (the SDK, pydantic), to its
    exit, and the CPU time it reports of itself: start-up's thousands of system calls."""
    elapsed, said = await sandboxed(policy, sys.executable, ["-c", IMPORTS])
    return {WALL: elapsed, OWN_CPU: float(said.strip())}


def stdio_server(command: str, args: list[str], policy: Any) -> Any:
    """An initialized session with a server started in a sandbox as the gateway starts it."""
    from mcp_gateway import SandboxSpec

    return gateway_stdio_session(command, args, policy, SandboxSpec(owner=1, network=False))


def spawner(
    command: str, args: list[str], tool: str, arguments: dict[str, Any]
) -> Callable[[Any], Awaitable[Figures]]:
    async def spawn_once(policy: Any) -> Figures:
        """From the spawn to the first call's answer (the close not counted), and the CPU
        time the sandbox's processes have taken by then (/proc, in clock ticks)."""
        start = time.perf_counter()
        async with stdio_server(command, args, policy) as session:
            checked(await session.call_tool(tool, arguments))
            elapsed = (time.perf_counter() - start) * 1000
            cpu = cpu_seconds(descendants(os.getpid())) * 1000
        return {"spawn + initialize + 1 call (ms)": elapsed, SERVER_CPU: cpu}

    return spawn_once


async def syscall_ns(policy: Any) -> Figures:
    """Nanoseconds per getppid() in a sandboxed Python."""
    _, said = await sandboxed(policy, sys.executable, ["-c", GETPPID])
    return {PER_CALL: float(said.strip())}


async def paired(
    name: str, measure: Callable[[Any], Awaitable[Figures]], rounds: int, policy: Any
) -> list[Row]:
    """`measure` with the filter and without, taking turns; for each figure the p50s and
    the median over rounds of what the filter added."""
    both = policies(policy)
    await measure(both[True])  # warm-up: the probe, the file cache, the filter's export
    samples: dict[tuple[str, bool], list[float]] = {}
    added: dict[str, list[float]] = {}
    for index in range(rounds):
        this = {}
        for on in (index % 2 == 0, index % 2 != 0):
            this[on] = await measure(both[on])
            for figure, value in this[on].items():
                samples.setdefault((figure, on), []).append(value)
        for figure in this[True]:
            added.setdefault(figure, []).append(this[True][figure] - this[False][figure])
    rows = []
    for figure, differences in added.items():
        digits = 0 if "(ns)" in figure else 1
        off, on = median(samples[figure, False]), median(samples[figure, True])
        rows += [
            Row(SECTION, f"{name}, {figure}: no filter, p50", f"{off:.{digits}f}"),
            Row(SECTION, f"{name}, {figure}: seccomp filter, p50", f"{on:.{digits}f}"),
            Row(
                SECTION,
                f"{name}, {figure}: the filter adds (median)",
                f"{median(differences):.{digits}f}",
            ),
        ]
    return rows


async def all_rows(rounds: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="wb-bench-seccomp-") as workdir:
        policy = gateway_sandbox_policy(Path(workdir))
        from mcp_gateway import seccomp_program

        start = time.perf_counter()
        program = seccomp_program()
        exported = (time.perf_counter() - start) * 1000
        rows = [
            Row(SECTION, "the filter built and exported, once per process (ms)", f"{exported:.1f}"),
            Row(SECTION, "the filter's size (BPF instructions)", str(len(program) // 8)),
        ]
        rows += await paired("empty sandbox", empty_sandbox, 4 * rounds, policy)
        rows += await paired(
            "python -c 'import mcp.server.stdio, pydantic'", python_imports, rounds, policy
        )
        time_server = spawner(sys.executable, ["-m", TIME_MODULE], "get_current_time", TIME_ARGS)
        rows += await paired("mcp-server-time", time_server, rounds, policy)
        memory = NODE_MEMORY / "mcp-server-memory"
        if shutil.which("node") and memory.exists():
            node_server = spawner(str(memory), [], "read_graph", {})
            rows += await paired("mcp-server-memory", node_server, rounds, policy)
        else:
            rows.append(Row(SECTION, "mcp-server-memory", "not measured: no Node"))
        rows += await paired("getppid() in the sandbox", syscall_ns, max(2, rounds // 2), policy)
    return rows


def main() -> None:
    parser = arguments(__doc__ or "")
    parser.add_argument("--rounds", type=int, default=20, help="spawns per mode")
    options = parser.parse_args()
    rounds = 2 if options.quick else options.rounds
    report(anyio.run(all_rows, rounds), options.json, "What the sandbox's seccomp filter costs")


if __name__ == "__main__":
    main()
