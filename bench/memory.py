"""Memory: the gateway's RSS with 0, 100 and 1,000 idle open sessions.

    .venv/bin/python bench/memory.py [--sessions 100,1000] [--quick]

An idle open session is a 2025-11-25 SDK client session (its own HTTP client) that has
initialized, listed the tools and called `open_toolbox` once. Two kinds, each in a fresh
gateway process (RSS from /proc/<pid>/status VmRSS, after a warm-up session that opened
the toolbox and made a few calls, so the downstream connection and code paths are loaded):
- connected: the session stays connected (client, transport, HTTP connections open). The
  SDK's client also asks for a standing GET stream; whatever the gateway keeps for it
  shows here (bench/README.md).
- disconnected: the session then drops its HTTP connections without ending the session
  (no DELETE): what is left is its open-toolbox entry in the shared store.
KiB per session = (RSS with N sessions - RSS with none) / N.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    Row,
    arguments,
    check,
    checked,
    gateway,
    gateway_session,
    report,
    rss_kib,
    use_call,
)

SECTION = "4 memory"
OPENING_AT_ONCE = 20  # sessions being set up concurrently
SETTLE_SECONDS = 2.0
QUICK_SETTLE_SECONDS = 0.3
RUN_TIMEOUT = 900.0


def settled_rss(pid: int, settle: float) -> int:
    """VmRSS after the process has had a moment to finish what the last session started."""
    samples = []
    for _ in range(3):
        time.sleep(settle / 3)
        samples.append(rss_kib(pid))
    return sorted(samples)[1]


async def warm_up(url: str, key: str) -> None:
    async with gateway_session(url, key) as session:
        for _ in range(5):
            checked(await session.call_tool("use_tool", use_call()))


async def connected(
    url: str, key: str, pid: int, counts: list[int], settle: float
) -> dict[int, int]:
    """RSS (KiB) with 0 and each count of sessions held open at once."""
    rss = {0: await anyio.to_thread.run_sync(settled_rss, pid, settle)}
    limiter = anyio.Semaphore(OPENING_AT_ONCE)
    release = anyio.Event()
    opened = 0

    async def hold() -> None:
        """One session, entered and left in its own task (anyio's rule for its scopes)."""
        nonlocal opened
        setting_up = True
        await limiter.acquire()
        try:
            async with gateway_session(url, key):
                limiter.release()
                setting_up = False
                opened += 1
                await release.wait()
        finally:
            if setting_up:
                limiter.release()

    async with anyio.create_task_group() as tasks:
        for count in counts:
            for _ in range(count - opened):
                tasks.start_soon(hold)
            while opened < count:
                await anyio.sleep(0.05)
            rss[count] = await anyio.to_thread.run_sync(settled_rss, pid, settle)
        release.set()
    return rss


async def disconnected(
    url: str, key: str, pid: int, counts: list[int], settle: float
) -> dict[int, int]:
    """RSS (KiB) with 0 and each count of sessions opened and then disconnected."""
    rss = {0: await anyio.to_thread.run_sync(settled_rss, pid, settle)}
    limiter = anyio.Semaphore(OPENING_AT_ONCE)
    done = 0

    async def open_and_leave() -> None:
        nonlocal done
        async with limiter, gateway_session(url, key, terminate_on_close=False):
            pass
        done += 1

    for count in counts:
        async with anyio.create_task_group() as tasks:
            for _ in range(count - done):
                tasks.start_soon(open_and_leave)
        rss[count] = await anyio.to_thread.run_sync(settled_rss, pid, settle)
    return rss


def measure(kind: str, counts: list[int], settle: float) -> dict[int, int]:
    run = connected if kind == "connected" else disconnected
    with gateway() as running:

        async def scenario() -> dict[int, int]:
            with anyio.fail_after(RUN_TIMEOUT):
                await warm_up(running.url, running.key)
                return await run(running.url, running.key, running.pid, counts, settle)

        return anyio.run(scenario)


def rows(results: dict[str, dict[int, int]]) -> list[Row]:
    out = []
    for kind, rss in results.items():
        figures = ", ".join(f"{count}: {kib / 1024:.1f}" for count, kib in rss.items())
        out.append(Row(SECTION, f"{kind}: gateway RSS (MiB) by idle sessions", figures))
        for count in (count for count in rss if count):
            per_session = (rss[count] - rss[0]) / count
            figure = f"{kind}: KiB per idle session, {count} sessions"
            out.append(check(SECTION, figure, per_session, 30, unit=" KiB", digits=1))
    return out


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--sessions", default="100,1000", help="session counts, ascending")
    parser.add_argument("--kinds", default="connected,disconnected")
    options = parser.parse_args()
    settle = SETTLE_SECONDS
    if options.quick:
        options.sessions, settle = "10", QUICK_SETTLE_SECONDS
    counts = sorted(int(count) for count in options.sessions.split(","))
    results = {kind: measure(kind, counts, settle) for kind in options.kinds.split(",")}
    report(rows(results), options.json, "Memory: gateway RSS with idle open sessions")


if __name__ == "__main__":
    main()
