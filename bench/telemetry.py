"""What recording costs: use_tool throughput and p50 with the call log and multiprocess
metrics on (the defaults) against off, in one run.

    .venv/bin/python bench/telemetry.py [--blocks 8] [--clients 2] [--block-calls 25] [--quick]

Two gateway processes that differ only in WORKBENCH_CALL_LOG and WORKBENCH_METRICS_DIR
("off": no call log, metrics in process memory only, no files). In interleaved blocks
(the order rotating), `clients` sessions call use_tool concurrently; calls/s of a block is
calls over its wall time. Ratio = median of per-block ratios. The house budget: the cost
is at most 5 % of throughput (ratio >= 0.95).
"""

from __future__ import annotations

import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    Row,
    arguments,
    checked,
    gateway,
    gateway_session,
    median,
    report,
    use_call,
)

SECTION = "8 telemetry"
ON = "call log + metrics on"
OFF = "off"
SETTINGS = {
    ON: {},  # the defaults
    OFF: {"WORKBENCH_CALL_LOG": "false", "WORKBENCH_METRICS_DIR": ""},
}


async def block(sessions: list, calls: int) -> tuple[float, list[float]]:
    """(calls per second, each call's ms) of `calls` calls on every session at once."""
    latencies: list[float] = []

    async def run(session) -> None:  # type: ignore[no-untyped-def]
        for _ in range(calls):
            start = time.perf_counter()
            checked(await session.call_tool("use_tool", use_call()))
            latencies.append((time.perf_counter() - start) * 1000)

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for session in sessions:
            group.start_soon(run, session)
    return len(sessions) * calls / (time.perf_counter() - start), latencies


async def rows(blocks: int, clients: int, calls: int) -> list[Row]:
    with gateway(env=SETTINGS[ON]) as on, gateway(env=SETTINGS[OFF]) as off:
        async with AsyncExitStack() as stack:
            sessions = {}
            for name, running in ((ON, on), (OFF, off)):
                sessions[name] = [
                    await stack.enter_async_context(gateway_session(running.url, running.key))
                    for _ in range(clients)
                ]
                await block(sessions[name], 5)  # warm-up
            rates: dict[str, list[float]] = {ON: [], OFF: []}
            latencies: dict[str, list[float]] = {ON: [], OFF: []}
            ratios = []
            for index in range(blocks):
                order = [ON, OFF] if index % 2 == 0 else [OFF, ON]
                rate = {}
                for name in order:
                    rate[name], got = await block(sessions[name], calls)
                    rates[name].append(rate[name])
                    latencies[name] += got
                ratios.append(rate[ON] / rate[OFF])
    result = [
        Row(SECTION, f"use_tool calls/s ({clients} clients), {name}", f"{median(rates[name]):.1f}")
        for name in (ON, OFF)
    ]
    result += [
        Row(SECTION, f"use_tool p50 (ms), {name}", f"{median(latencies[name]):.2f}")
        for name in (ON, OFF)
    ]
    result.append(
        Row(SECTION, "throughput on / off, median of block ratios", f"{median(ratios):.3f}")
    )
    return result


def main() -> None:
    parser = arguments(__doc__ or "")
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--block-calls", type=int, default=25)
    options = parser.parse_args()
    blocks, clients, calls = (
        (2, 2, 3) if options.quick else (options.blocks, options.clients, options.block_calls)
    )
    report(anyio.run(rows, blocks, clients, calls), options.json, "What recording costs")


if __name__ == "__main__":
    main()
