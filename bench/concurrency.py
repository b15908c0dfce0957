"""Concurrency: many sessions of one tenant calling `use_tool` at once; and scaling with workers.

    .venv/bin/python bench/concurrency.py [--sessions 100] [--calls 20] [--workers 1[,2]]
                                          [--redis] [--client raw|sdk] [--quick]

Each session (an anyio task of this process, its own HTTP client) initializes (2025-11-25,
so it has an `Mcp-Session-Id`), opens the toolbox, waits until every session has, then makes
its calls to mcp-server-time's `get_current_time` one after another. The load runs in this
process, the gateway in its own (uvicorn, `--workers N`), so their CPU time is counted apart.

`--client raw` (default) speaks JSON-RPC over httpx2 directly: on 2 cores the load
generator competes with the gateway for CPU, and the SDK's client costs several times more
per call than the gateway does; `--client sdk` uses the SDK's ClientSession instead.
`--workers 1,2 --redis` runs the load once per worker count, with CACHE_URL on Redis (what
several workers need), and reports the throughput ratio.
"""

from __future__ import annotations

import json
import os
import random
import resource
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    HTTP_TIMEOUT,
    REDIS_URL,
    TIME_ARGS,
    TOOLBOX,
    Row,
    arguments,
    check,
    checked,
    cpu_seconds,
    descendants,
    gateway,
    gateway_session,
    median,
    ms,
    p50_p90_p99,
    redis_reachable,
    report,
    sdk_server,
    use_call,
)

SECTION = "3 concurrency"
SCALING = "5 workers"
PROTOCOL = "2025-11-25"
RUN_TIMEOUT = 300.0

Call = Callable[[], Awaitable[None]]


@dataclass
class Outcome:
    calls: int = 0
    succeeded: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0
    downstream: int | None = None
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds in the timed window

    @property
    def rate(self) -> float:
        """Successful calls per second of the whole run."""
        return self.succeeded / self.seconds if self.seconds else 0.0

    def failed(self, reason: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 3:
            self.error_samples.append(reason[:200])


class RawSession:
    """A 2025-11-25 session in plain JSON-RPC over HTTP: the cheapest client there is."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.session_id: str | None = None
        self.next_id = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        headers = {"Accept": "application/json, text/event-stream"}
        if self.session_id:
            headers |= {"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": PROTOCOL}
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        response = await self.http.post(self.url, json=body, headers=headers)
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
        self.session_id = self.session_id or response.headers.get("mcp-session-id")
        for line in response.text.splitlines():  # an SSE stream with one message, or JSON
            if line.startswith("data:"):
                message = json.loads(line[5:])
                break
        else:
            message = response.json()
        if "error" in message:
            raise RuntimeError(f"JSON-RPC error: {message['error']}")
        return message["result"]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> None:
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"tool error: {json.dumps(result)[:200]}")

    async def start(self) -> None:
        client = {"name": "bench", "version": "0"}
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client}
        await self.request("initialize", params)
        headers = {"MCP-Protocol-Version": PROTOCOL}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.http.post(self.url, json=body, headers=headers)


Connect = Callable[[], AbstractAsyncContextManager[Call]]


def raw_client(url: str, key: str | None, tool: str, args: dict[str, Any]) -> Connect:
    """Sessions of RawSession calling tool (after opening the toolbox, through a gateway)."""

    @asynccontextmanager
    async def connect() -> AsyncIterator[Call]:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT) as http:
            session = RawSession(http, url)
            await session.start()
            if key:
                await session.call_tool("open_toolbox", {"toolbox": TOOLBOX})
            yield lambda: session.call_tool(tool, args)

    return connect


def sdk_client(url: str, key: str) -> Connect:
    """Sessions of the SDK's ClientSession through the gateway."""

    @asynccontextmanager
    async def connect() -> AsyncIterator[Call]:
        async with gateway_session(url, key) as session:

            async def call() -> None:
                checked(await session.call_tool("use_tool", use_call()))

            yield call

    return connect


async def load(
    connect: Connect,
    sessions: int,
    calls: int,
    outcome: Outcome,
    on_start: Callable[[], None],
    on_end: Callable[[], None],
) -> None:
    """sessions concurrent sessions, calls each, all starting together once all are open;
    on_start and on_end run at the edges of the timed window."""
    ready = 0
    finished = 0
    all_ready = anyio.Event()
    done = anyio.Event()

    def arrived(count: int, event: anyio.Event) -> None:
        if count == sessions:
            event.set()

    async def one_session() -> None:
        nonlocal ready, finished
        try:
            async with connect() as call:
                ready += 1
                arrived(ready, all_ready)
                await all_ready.wait()
                for _ in range(calls):
                    start = time.perf_counter()
                    try:
                        await call()
                        outcome.latencies_ms.append((time.perf_counter() - start) * 1000)
                        outcome.succeeded += 1
                    except Exception as exc:  # counted, not raised: errors are a figure
                        outcome.failed(f"{type(exc).__name__}: {exc}")
                    outcome.calls += 1
                finished += 1
                arrived(finished, done)
                await done.wait()  # keep every session open until all calls are done
        except Exception as exc:
            outcome.failed(f"session failed: {type(exc).__name__}: {exc}")
            outcome.calls += calls
            if not all_ready.is_set():
                ready += 1
                arrived(ready, all_ready)
            finished += 1
            arrived(finished, done)

    with anyio.fail_after(RUN_TIMEOUT):
        async with anyio.create_task_group() as tasks:
            for _ in range(sessions):
                tasks.start_soon(one_session)
            await all_ready.wait()
            on_start()
            start = time.perf_counter()
            await done.wait()
            outcome.seconds = time.perf_counter() - start
            on_end()


class CpuWindow:
    """CPU seconds of each group of processes between start() and end()."""

    def __init__(self, groups: Callable[[], dict[str, list[int]]]) -> None:
        self.groups = groups
        self.seconds: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        now = {name: cpu_seconds(pids) for name, pids in self.groups().items()}
        return now | {"load generator": usage.ru_utime + usage.ru_stime}

    def start(self) -> None:
        self.seconds = {name: -value for name, value in self._now().items()}

    def end(self) -> None:
        for name, value in self._now().items():
            self.seconds[name] = self.seconds.get(name, 0.0) + value


def run_gateway(
    sessions: int, calls: int, workers: int, cache_url: str | None, client: str
) -> Outcome:
    outcome = Outcome()
    with gateway(workers=workers, cache_url=cache_url) as running:
        connect = (
            raw_client(running.url, running.key, "use_tool", use_call())
            if client == "raw"
            else sdk_client(running.url, running.key)
        )

        def groups() -> dict[str, list[int]]:
            return {"gateway": running.own_pids(), "mcp-server-time": running.downstream()}

        window = CpuWindow(groups)
        anyio.run(load, connect, sessions, calls, outcome, window.start, window.end)
        outcome.cpu = window.seconds
        outcome.downstream = len(running.servers())
    return outcome


def run_reference(sessions: int, calls: int, *, forward: bool = False) -> Outcome:
    """The same load on the SDK alone, answering with JSON bodies as the gateway does: a
    trivial tool (this machine's ceiling), or with `forward` every call passed on to
    mcp-server-time through one SDK client session and nothing checked (the least any
    gateway built on the SDK does: the floor under the gateway's tail)."""
    outcome = Outcome()
    options = ("--json", "--forward") if forward else ("--json",)
    with sdk_server(*options) as (url, process):

        def groups() -> dict[str, list[int]]:
            children = descendants(process.pid)
            return {"SDK server": [process.pid]} | (
                {"mcp-server-time": children} if forward else {}
            )

        window = CpuWindow(groups)
        connect = raw_client(url, None, "get_current_time", TIME_ARGS)
        anyio.run(load, connect, sessions, calls, outcome, window.start, window.end)
        outcome.cpu = window.seconds
    return outcome


def rows(outcome: Outcome, section: str, label: str, workers: int) -> list[Row]:
    p50, _, p99 = p50_p90_p99(outcome.latencies_ms)
    per_call = " / ".join(
        f"{name} {seconds * 1000 / max(outcome.calls, 1):.2f}"
        for name, seconds in outcome.cpu.items()
    )
    out = [
        check(section, f"{label}calls/s", outcome.rate, 500, at_most=False, digits=0),
        Row(section, f"{label}latency p50 / p99 (ms)", ms((p50, p99))),
        check(section, f"{label}p99", p99, 100, unit=" ms"),
        check(section, f"{label}errors (of {outcome.calls} calls)", outcome.errors, 0, digits=0),
    ]
    if outcome.downstream is not None:
        out.append(
            Row(
                section,
                f"{label}downstream mcp-server-time processes",
                str(outcome.downstream),
                f"≤ {workers} (1 per server per worker)",
                "PASS" if 1 <= outcome.downstream <= workers else "MISS",
            )
        )
    out.append(Row(section, f"{label}CPU ms per call", per_call))
    if "gateway" in outcome.cpu:
        gateway_ms = outcome.cpu["gateway"] * 1000 / max(outcome.calls, 1)
        out.append(check(section, f"{label}gateway CPU per use_tool", gateway_ms, 2.0, unit=" ms"))
    cpu_per_call = sum(outcome.cpu.values()) / max(outcome.calls, 1)
    if cpu_per_call:
        out.append(
            Row(
                section,
                f"{label}CPU-bound ceiling: {os.cpu_count()} cores / all CPU per call (calls/s)",
                f"{(os.cpu_count() or 1) / cpu_per_call:.0f}",
            )
        )
    if outcome.error_samples:
        out.append(Row(section, f"{label}first errors", "; ".join(outcome.error_samples)))
    return out


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--workers", default="1", help="worker counts, e.g. 1 or 1,2")
    parser.add_argument("--redis", action="store_true", help="CACHE_URL on Redis")
    parser.add_argument("--client", choices=("raw", "sdk"), default="raw")
    parser.add_argument("--rounds", type=int, default=1, help="repeat the worker counts in turn")
    parser.add_argument(
        "--reference", action="store_true", help="also the same load on the SDK alone"
    )
    options = parser.parse_args()
    worker_counts = [int(count) for count in options.workers.split(",")]
    if options.quick:  # the largest worker count only: each gateway start costs seconds
        options.sessions, options.calls, options.rounds = 5, 3, 1
        worker_counts = worker_counts[-1:]
    scaling = len(worker_counts) > 1 or options.redis
    section = SCALING if scaling else SECTION
    title = (
        f"Concurrency: {options.sessions} sessions x {options.calls} use_tool calls, "
        f"{options.client} client"
    )
    cache_url = None
    if options.redis:
        if not redis_reachable(REDIS_URL):
            skipped = Row(section, "runs on Redis", f"skipped: Redis not reachable at {REDIS_URL}")
            report([skipped], options.json, title)
            return
        # A database of its own, as the multi-process tests do, so runs do not meet.
        cache_url = f"{REDIS_URL}/{random.randint(1, 15)}"
    outcomes: dict[int, list[Outcome]] = {workers: [] for workers in worker_counts}
    for _ in range(options.rounds):
        for workers in worker_counts:
            outcomes[workers].append(
                run_gateway(options.sessions, options.calls, workers, cache_url, options.client)
            )
    all_rows: list[Row] = []
    for workers, runs in outcomes.items():
        label = f"{workers} worker{'s' if workers > 1 else ''}, Redis: " if scaling else ""
        all_rows += rows(runs[0], section, label, workers)
        if len(runs) > 1:
            rates = ", ".join(f"{run.rate:.0f}" for run in runs)
            all_rows.append(Row(section, f"{label}calls/s of each round", rates))
    if 1 in outcomes and 2 in outcomes:
        ratios = [
            two.rate / one.rate if one.rate else 0.0
            for one, two in zip(outcomes[1], outcomes[2], strict=True)
        ]
        figure = "throughput 2 workers / 1 worker" + (
            ", median of rounds" if len(ratios) > 1 else ""
        )
        all_rows.append(check(section, figure, median(ratios), 1.6, at_most=False))
    if options.reference:
        reference = run_reference(options.sessions, options.calls)
        all_rows += rows(reference, section, "reference, SDK alone (trivial tool): ", 0)
        proxy = run_reference(options.sessions, options.calls, forward=True)
        label = "reference, SDK proxy to mcp-server-time (checks nothing): "
        all_rows += rows(proxy, section, label, 0)
        alone = p50_p90_p99(reference.latencies_ms)[2]
        for name, outcome in (("gateway", outcomes[worker_counts[0]][0]), ("SDK proxy", proxy)):
            ratio = p50_p90_p99(outcome.latencies_ms)[2] / alone if alone else 0.0
            all_rows.append(check(section, f"p99 {name} / SDK alone", ratio, 2.0))
        gateway_p99 = p50_p90_p99(outcomes[worker_counts[0]][0].latencies_ms)[2]
        proxy_p99 = p50_p90_p99(proxy.latencies_ms)[2]
        ratio = gateway_p99 / proxy_p99 if proxy_p99 else 0.0
        figure = "p99 gateway / SDK proxy (what checking costs)"
        all_rows.append(Row(section, figure, f"{ratio:.2f}"))
    report(all_rows, options.json, title)


if __name__ == "__main__":
    main()
