"""The floor under issue 15's CPU target: what the `mcp` SDK alone costs per call, beside
what the gateway costs per `use_tool`, in one run.

    .venv/bin/python bench/floor.py [--blocks 10] [--block-calls 100] [--quick]

Three paths, one SDK client session each, blocks of sequential calls taking turns (the
order alternating); CPU per call from /proc over each block:

- gateway: `use_tool` through a gateway (shipped defaults, toolbox `bench` with
  mcp-server-time); its own process's CPU, not its downstream server's;
- SDK server alone: bench/sdk_server.py with `--json`, the SDK's low-level server,
  stateless, one JSON body per answer (as the gateway answers a call that asks for no
  progress), on the same uvicorn loop and parser; its CPU for a trivial tool, nothing
  forwarded, nothing checked;
- SDK client alone: this process's own CPU per call of the SDK's client to mcp-server-time
  over stdio (how the gateway calls downstream, unsandboxed).

The last two added up are what any gateway that lets the SDK make every byte of MCP
spends to forward one call and check nothing: the floor under the gateway's figure.
"""

from __future__ import annotations

import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp.client.session import ClientSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    TIME_ARGS,
    Row,
    arguments,
    check,
    checked,
    cpu_seconds,
    gateway,
    gateway_session,
    http_session,
    median,
    report,
    sdk_server,
    stdio_session,
    use_call,
)

SECTION = "9 floor"
GATEWAY = "gateway, use_tool"
SDK_SERVER = "SDK server alone, trivial tool"
SDK_CLIENT = "SDK client alone, stdio"


async def measure(
    paths: dict[str, tuple[str, str | None, list[int]]], blocks: int, block_calls: int
) -> dict[str, dict[str, list[float]]]:
    """Per path: each call's milliseconds, and each block's CPU milliseconds per call."""
    figures: dict[str, dict[str, list[float]]] = {name: {"ms": [], "cpu": []} for name in paths}
    async with AsyncExitStack() as stack:
        sessions: dict[str, ClientSession] = {}
        for name, (url, key, _) in paths.items():
            if name == SDK_CLIENT:
                context = stdio_session()
            else:
                context = gateway_session(url, key) if key else http_session(url)
            sessions[name] = await stack.enter_async_context(context)

        async def call(name: str) -> None:
            if name == GATEWAY:
                checked(await sessions[name].call_tool("use_tool", use_call()))
            else:
                checked(await sessions[name].call_tool("get_current_time", TIME_ARGS))

        def cpu_seconds_of(name: str) -> float:
            pids = paths[name][2]
            return time.process_time() if not pids else cpu_seconds(pids)

        names = list(paths)
        for name in names:
            for _ in range(20):  # warm-up
                await call(name)
        for block in range(blocks):
            for name in names if block % 2 == 0 else names[::-1]:
                cpu = -cpu_seconds_of(name)
                for _ in range(block_calls):
                    start = time.perf_counter()
                    await call(name)
                    figures[name]["ms"].append((time.perf_counter() - start) * 1000)
                figures[name]["cpu"].append((cpu + cpu_seconds_of(name)) * 1000 / block_calls)
    return figures


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--block-calls", type=int, default=100)
    options = parser.parse_args()
    if options.quick:
        options.blocks, options.block_calls = 2, 5
    with sdk_server("--json") as (sdk_url, sdk), gateway() as running:
        paths = {
            GATEWAY: (running.url, running.key, running.own_pids()),
            SDK_SERVER: (sdk_url, None, [sdk.pid]),
            SDK_CLIENT: ("", None, []),  # this process
        }
        figures = anyio.run(measure, paths, options.blocks, options.block_calls)
    cpu = {name: median(values["cpu"]) for name, values in figures.items()}
    p50 = {name: median(values["ms"]) for name, values in figures.items()}
    floor = cpu[SDK_SERVER] + cpu[SDK_CLIENT]
    calls = options.blocks * options.block_calls
    rows = [
        check(SECTION, "gateway CPU per use_tool, sequential", cpu[GATEWAY], 2.0, unit=" ms"),
        Row(
            SECTION,
            "SDK server alone (JSON answers) / SDK client alone (stdio): CPU per call (ms)",
            f"{cpu[SDK_SERVER]:.2f} / {cpu[SDK_CLIENT]:.2f}",
        ),
        Row(SECTION, "floor: the two added up, a forward that checks nothing (ms)", f"{floor:.2f}"),
        Row(
            SECTION,
            "what the gateway spends above the floor (ms of CPU)",
            f"{cpu[GATEWAY] - floor:.2f}",
        ),
        Row(
            SECTION,
            f"p50: gateway / SDK server alone / SDK client alone (ms, {calls} calls each)",
            " / ".join(f"{p50[name]:.2f}" for name in (GATEWAY, SDK_SERVER, SDK_CLIENT)),
        ),
    ]
    report(rows, options.json, f"Floor: {options.blocks} blocks of {options.block_calls} calls")


if __name__ == "__main__":
    main()
