"""What the sandbox's network costs: a stdio server's start and calls with no sandbox, in
a sandbox with its network off, and in one with the filtered network (slirp4netns + nft),
and an HTTP request from inside the sandbox against the same from the host.

    .venv/bin/python bench/sandbox_network.py [--rounds 10] [--blocks 8] [--calls 20] [--quick]

- empty sandbox: `/bin/true` in a sandbox (`sandbox_start.open_sandboxed`), network off
  and on, from the spawn to its exit: what the filtered network adds (slirp4netns
  started, the nft rules installed) without Python's own start to hide it;
- spawn: `python -m mcp_server_time` started through the gateway's own stdio client
  (`mcp_gateway.bounded_stdio_client`, the sandbox's command line from
  `mcp_gateway.sandbox_launch`, as downstream/transports.py builds it), initialized and called once
  (`get_current_time`), timed from the spawn to the call's answer; the three modes take
  turns, the order rotating each round;
- use_tool: sequential calls through two gateways (`WORKBENCH_SANDBOX=none` with the
  server unsandboxed; the default bwrap with the server twice, network off and on), in
  blocks taking turns;
- HTTP: a GET (a new connection each, HTTP/1.0) to a test host, an HTTP server in a
  network namespace this script makes (veth, 198.19.x.0/24), from a client in the
  sandbox (through slirp4netns, the test host's network allowed) and from the same
  client on the host, in blocks taking turns.

Ratios are the median over rounds (blocks) of per-round ratios of p50s, all in one run.
Needs root (bubblewrap as the gateway runs it, `ip netns`); what cannot run says so in
its row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    TIME_ARGS,
    TIME_MODULE,
    Row,
    StdioServer,
    arguments,
    checked,
    gateway,
    gateway_sandbox_policy,
    gateway_session,
    gateway_stdio_session,
    median,
    percentile,
    report,
    time_server,
)
from tests.harness import netns

SECTION = "10 sandbox network"
NONE, OFF, ON = "no sandbox", "sandbox, network off", "sandbox, filtered network"
MODES = (NONE, OFF, ON)
TEST_HOSTS = "198.19.0.0/16"  # a benchmarking range (RFC 2544); the tests use 198.18/16
CLIENT = """
import http.client, json, sys, time
host, port = sys.argv[1], int(sys.argv[2])
for line in sys.stdin:
    times = []
    for _ in range(int(line)):
        start = time.perf_counter()
        connection = http.client.HTTPConnection(host, port, timeout=10)
        connection.request("GET", "/")
        connection.getresponse().read()
        connection.close()
        times.append((time.perf_counter() - start) * 1000)
    print(json.dumps(times), flush=True)
"""


# Spawn


def stdio_server(mode: str, policy: Any) -> Any:
    """An initialized session with the time server, started in `mode` as the gateway
    starts it."""
    from mcp_gateway import SandboxSpec

    spec = None if mode == NONE else SandboxSpec(owner=1, network=mode == ON)
    return gateway_stdio_session(sys.executable, ["-m", TIME_MODULE], policy, spec)


async def spawn_once(mode: str, policy: Any) -> float:
    """Milliseconds from the spawn to the first call's answer (the close not counted)."""
    start = time.perf_counter()
    async with stdio_server(mode, policy) as session:
        checked(await session.call_tool("get_current_time", TIME_ARGS))
        elapsed = (time.perf_counter() - start) * 1000
    return elapsed


async def empty_sandbox(network: bool, policy: Any) -> float:
    """Milliseconds from the spawn of an empty sandbox (`/bin/true`) to its exit: the
    sandbox's own cost, with or without its filtered network, without Python's start."""
    from kernel.egress import EgressPolicy
    from mcp_gateway import SandboxSpec, open_sandboxed, sandbox_launch

    spec = SandboxSpec(owner=1, network=network)
    launched = sandbox_launch("/bin/true", [], {"PATH": "/usr/bin:/bin"}, None, spec, policy)
    start = time.perf_counter()
    process, started = await open_sandboxed(
        launched.argv, launched.env, subprocess.DEVNULL, spec, policy, EgressPolicy([])
    )
    await process.wait()
    elapsed = (time.perf_counter() - start) * 1000
    await started.close()
    if process.returncode != 0:
        raise RuntimeError(f"the empty sandbox exited with {process.returncode}")
    return elapsed


async def empty_rows(rounds: int, policy: Any) -> list[Row]:
    samples: dict[bool, list[float]] = {False: [], True: []}
    added = []
    for index in range(rounds):
        this = {}
        for network in (index % 2 == 0, index % 2 != 0):
            this[network] = await empty_sandbox(network, policy)
            samples[network].append(this[network])
        added.append(this[True] - this[False])
    off, on = median(samples[False]), median(samples[True])
    return [
        Row(SECTION, "empty sandbox, start to exit, network off: p50 (ms)", f"{off:.1f}"),
        Row(SECTION, "empty sandbox, start to exit, filtered network: p50 (ms)", f"{on:.1f}"),
        Row(
            SECTION, "empty sandbox: the filtered network adds (ms, median)", f"{median(added):.1f}"
        ),
    ]


async def spawn_rows(rounds: int, policy: Any) -> list[Row]:
    await spawn_once(OFF, policy)  # warm-up: the probe, the file cache
    samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    off_none, on_off, added = [], [], []
    for index in range(rounds):
        shift = index % len(MODES)
        this = {}
        for mode in MODES[shift:] + MODES[:shift]:
            this[mode] = await spawn_once(mode, policy)
            samples[mode].append(this[mode])
        off_none.append(this[OFF] / this[NONE])
        on_off.append(this[ON] / this[OFF])
        added.append(this[ON] - this[OFF])
    rows = [
        Row(
            SECTION,
            f"spawn + initialize + 1 call, {mode}: p50 (ms)",
            f"{median(samples[mode]):.1f}",
        )
        for mode in MODES
    ]
    rows += [
        Row(SECTION, "spawn: network off / no sandbox", f"{median(off_none):.2f}"),
        Row(SECTION, "spawn: filtered network / network off", f"{median(on_off):.2f}"),
        Row(SECTION, "spawn: the filtered network adds (ms, median)", f"{median(added):.1f}"),
    ]
    return rows


# use_tool through the gateway


def use(toolbox: str) -> dict[str, Any]:
    return {
        "tool": {"toolbox": toolbox, "server": "time", "name": "get_current_time"},
        "arguments": TIME_ARGS,
    }


async def timed_block(call: Callable[[], Awaitable[object]], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        checked(await call())  # type: ignore[arg-type]
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def use_tool_rows(blocks: int, calls: int) -> list[Row]:
    sandboxed = {
        "off": [
            StdioServer("time", sys.executable, ("-m", TIME_MODULE), fields={"network": False})
        ],
        "on": [time_server()],
    }
    with (
        gateway({"plain": [time_server()]}, env={"WORKBENCH_SANDBOX": "none"}) as plain,
        gateway(sandboxed) as boxed,
    ):
        async with AsyncExitStack() as stack:
            where = {NONE: (plain, "plain"), OFF: (boxed, "off"), ON: (boxed, "on")}
            sessions = {
                mode: await stack.enter_async_context(
                    gateway_session(running.url, running.key, open_toolbox=toolbox)
                )
                for mode, (running, toolbox) in where.items()
            }
            for mode, session in sessions.items():  # warm-up
                await timed_block(
                    lambda s=session, t=where[mode][1]: s.call_tool("use_tool", use(t)), 5
                )
            samples: dict[str, list[float]] = {mode: [] for mode in MODES}
            on_none, on_off = [], []
            for index in range(blocks):
                shift = index % len(MODES)
                p50 = {}
                for mode in MODES[shift:] + MODES[:shift]:
                    session, toolbox = sessions[mode], where[mode][1]
                    got = await timed_block(
                        lambda s=session, t=toolbox: s.call_tool("use_tool", use(t)), calls
                    )
                    samples[mode] += got
                    p50[mode] = percentile(got, 50)
                on_none.append(p50[ON] / p50[NONE])
                on_off.append(p50[ON] / p50[OFF])
    rows = [
        Row(
            SECTION,
            f"use_tool, {mode}: p50 / p90 (ms)",
            f"{percentile(samples[mode], 50):.2f} / {percentile(samples[mode], 90):.2f}",
        )
        for mode in MODES
    ]
    rows += [
        Row(SECTION, "use_tool: filtered network / network off", f"{median(on_off):.3f}"),
        Row(SECTION, "use_tool: filtered network / no sandbox", f"{median(on_none):.3f}"),
    ]
    return rows


# An HTTP request to a test host


class Client:
    """CLIENT running somewhere: `block(n)` makes n requests, the milliseconds of each."""

    def __init__(self, process: Any) -> None:
        self.process = process
        self.lines = BufferedByteReceiveStream(process.stdout)

    async def block(self, count: int) -> list[float]:
        await self.process.stdin.send(f"{count}\n".encode())
        with anyio.fail_after(120):
            line = await self.lines.receive_until(b"\n", 1 << 20)
        return json.loads(line)

    async def stop(self) -> None:
        await self.process.stdin.aclose()
        with anyio.move_on_after(10):
            await self.process.wait()
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


@asynccontextmanager
async def http_clients(host: netns.TestHost, policy: Any) -> AsyncIterator[dict[str, Client]]:
    """The client on the host and in a sandbox allowed the test host's network."""
    from kernel.egress import EgressPolicy
    from mcp_gateway import SandboxSpec, open_sandboxed, sandbox_launch

    args = ["-c", CLIENT, host.address, str(host.port)]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    spec = SandboxSpec(owner=1, egress_allow=(host.network,))
    launched = sandbox_launch(sys.executable, args, env, None, spec, policy)
    plain = await anyio.open_process([sys.executable, *args], stderr=subprocess.DEVNULL)
    boxed, started = await open_sandboxed(
        launched.argv, launched.env, subprocess.DEVNULL, spec, policy, EgressPolicy([])
    )
    clients = {"from the host": Client(plain), "from the sandbox": Client(boxed)}
    try:
        yield clients
    finally:
        with anyio.CancelScope(shield=True):
            for client in clients.values():
                await client.stop()
            await started.close()


async def http_rows(blocks: int, requests: int, policy: Any) -> list[Row]:
    reason = netns.unavailable()
    if reason:
        return [Row(SECTION, "HTTP GET to a test host", f"not measured: {reason}")]
    with netns.test_host(TEST_HOSTS) as host:
        async with http_clients(host, policy) as clients:
            for client in clients.values():
                await client.block(5)  # warm-up
            samples: dict[str, list[float]] = {name: [] for name in clients}
            ratios = []
            for index in range(blocks):
                names = list(clients)[index % 2 :] + list(clients)[: index % 2]
                p50 = {}
                for name in names:
                    got = await clients[name].block(requests)
                    samples[name] += got
                    p50[name] = percentile(got, 50)
                ratios.append(p50["from the sandbox"] / p50["from the host"])
    rows = [
        Row(
            SECTION,
            f"HTTP GET to a test host, {name}: p50 / p90 (ms)",
            f"{percentile(got, 50):.2f} / {percentile(got, 90):.2f}",
        )
        for name, got in samples.items()
    ]
    added = percentile(samples["from the sandbox"], 50) - percentile(samples["from the host"], 50)
    rows += [
        Row(SECTION, "HTTP GET: sandbox / host", f"{median(ratios):.2f}"),
        Row(SECTION, "HTTP GET: slirp4netns adds, p50 (ms)", f"{added:.2f}"),
    ]
    return rows


async def all_rows(rounds: int, blocks: int, calls: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="wb-bench-net-") as workdir:
        policy = gateway_sandbox_policy(Path(workdir))
        rows = await empty_rows(4 * rounds, policy)
        rows += await spawn_rows(rounds, policy)
        rows += await use_tool_rows(blocks, calls)
        rows += await http_rows(blocks, calls, policy)
    return rows


def main() -> None:
    parser = arguments(__doc__ or "")
    parser.add_argument("--rounds", type=int, default=10, help="spawns per mode")
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--calls", type=int, default=20, help="calls (requests) per block")
    options = parser.parse_args()
    rounds, blocks, calls = (
        (2, 2, 3) if options.quick else (options.rounds, options.blocks, options.calls)
    )
    report(
        anyio.run(all_rows, rounds, blocks, calls), options.json, "What the sandbox's network costs"
    )


if __name__ == "__main__":
    main()
