"""Call latency: `use_tool` through Workbench beside the same kind of call on three other paths.

    .venv/bin/python bench/latency.py [--blocks 10] [--block-calls 20] [--warmup 20] [--quick]

Paths, each on one client session held for the whole run (our SDK client, 2025-11-25):
- direct stdio: `get_current_time` of `python -m mcp_server_time` (a);
- SDK HTTP: a trivial tool served by the SDK alone over Streamable HTTP on loopback, the
  HTTP hop's cost (b; bench/sdk_server.py);
- Workbench: `use_tool` to that same `get_current_time` through a real gateway process;
- Workbench toolbox endpoint: the same tool called as `time__get_current_time` on the
  toolbox's own endpoint (`/mcp/t/bench/toolboxes/bench`) of that gateway;
- FastMCP proxy: FastMCP's `create_proxy` over the same stdio server, served by uvicorn, run
  from bench/.fastmcp-venv (skipped when that venv is absent, and in --quick mode).

The paths take turns in blocks (the order rotates each block), so that machine drift hits
them alike; the ratios are the median of the per-block ratios of p50s.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from pathlib import Path

import anyio
from mcp.client.session import ClientSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    BENCH,
    FASTMCP_PYTHON,
    TENANT,
    TIME_ARGS,
    TOOLBOX,
    Row,
    arguments,
    check,
    checked,
    free_port,
    gateway,
    gateway_session,
    http_session,
    in_fastmcp_venv,
    median,
    ms,
    p50_p90_p99,
    report,
    sdk_server,
    serving,
    stdio_session,
    timed,
    use_call,
)

DIRECT = "direct stdio (a)"
SDK_HTTP = "SDK HTTP (b)"
WORKBENCH = "Workbench"
TOOLBOX_ENDPOINT = "Workbench toolbox endpoint"
FASTMCP = "FastMCP proxy"
SECTION = "1 latency"

Call = Callable[[], Awaitable[object]]


@asynccontextmanager
async def direct_path() -> AsyncIterator[Call]:
    async with stdio_session() as session:
        yield lambda: _call(session, "get_current_time", TIME_ARGS)


@asynccontextmanager
async def http_path(url: str) -> AsyncIterator[Call]:
    async with http_session(url) as session:
        yield lambda: _call(session, "get_current_time", TIME_ARGS)


@asynccontextmanager
async def workbench_path(url: str, key: str) -> AsyncIterator[Call]:
    async with gateway_session(url, key) as session:
        yield lambda: _call(session, "use_tool", use_call())


@asynccontextmanager
async def toolbox_endpoint_path(url: str, key: str) -> AsyncIterator[Call]:
    endpoint = f"{url.rstrip('/')}/t/{TENANT}/toolboxes/{TOOLBOX}"
    async with gateway_session(endpoint, key, open_toolbox=None) as session:
        yield lambda: _call(session, "time__get_current_time", TIME_ARGS)


async def _call(session: ClientSession, name: str, args: dict[str, object]) -> object:
    return checked(await session.call_tool(name, args))


def fastmcp_missing() -> str | None:
    """Why the FastMCP path cannot run here, or None when it can."""
    done = in_fastmcp_venv("import fastmcp, mcp_server_time, uvicorn")
    if done is None:
        return "not measured: bench/.fastmcp-venv is missing (make bench creates it)"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"not measured: bench/.fastmcp-venv is incomplete ({last[:120]})"
    return None


@contextmanager
def servers(with_fastmcp: bool, notes: dict[str, str]) -> Iterator[dict[str, str]]:
    """The HTTP servers of the run: name -> URL (the gateway's URL with its key after '#').
    A FastMCP proxy that does not start is noted, not fatal."""
    with ExitStack() as stack:
        urls: dict[str, str] = {}
        urls[SDK_HTTP], _ = stack.enter_context(sdk_server())
        running = stack.enter_context(gateway())
        urls[WORKBENCH] = f"{running.url}#{running.key}"
        if with_fastmcp:
            port = free_port()
            command = [str(FASTMCP_PYTHON), str(BENCH / "fastmcp_proxy.py"), "--port", str(port)]
            try:
                stack.enter_context(serving(command, port, "fastmcp proxy"))
                urls[FASTMCP] = f"http://127.0.0.1:{port}/mcp"
            except (RuntimeError, AssertionError) as exc:
                notes[FASTMCP] = f"not measured: the proxy did not start ({str(exc)[-200:]})"
        yield urls


async def measure(
    urls: dict[str, str], blocks: int, block_calls: int, warmup: int
) -> dict[str, list[list[float]]]:
    """Per path, the samples (ms) of each block."""
    async with AsyncExitStack() as stack:
        gateway_url, key = urls[WORKBENCH].split("#", 1)
        calls: dict[str, Call] = {
            DIRECT: await stack.enter_async_context(direct_path()),
            SDK_HTTP: await stack.enter_async_context(http_path(urls[SDK_HTTP])),
            WORKBENCH: await stack.enter_async_context(workbench_path(gateway_url, key)),
            TOOLBOX_ENDPOINT: await stack.enter_async_context(
                toolbox_endpoint_path(gateway_url, key)
            ),
        }
        if FASTMCP in urls:
            calls[FASTMCP] = await stack.enter_async_context(http_path(urls[FASTMCP]))
        for call in calls.values():
            await timed(call, warmup)
        names = list(calls)
        samples: dict[str, list[list[float]]] = {name: [] for name in names}
        for block in range(blocks):
            for name in names[block % len(names) :] + names[: block % len(names)]:
                samples[name].append(await timed(calls[name], block_calls))
        return samples


def rows(samples: dict[str, list[list[float]]], fastmcp_note: str | None) -> list[Row]:
    total = sum(len(block) for block in samples[WORKBENCH])
    out = [
        Row(
            SECTION,
            f"{name}: p50 / p90 / p99 (ms, {total} calls)",
            ms(p50_p90_p99([sample for block in blocks for sample in block])),
        )
        for name, blocks in samples.items()
    ]
    if fastmcp_note:
        out.append(Row(SECTION, f"{FASTMCP}: p50 / p90 / p99 (ms)", fastmcp_note))
    p50s = {name: [median(block) for block in blocks] for name, blocks in samples.items()}
    over_ab = [
        wb / (a + b) for wb, a, b in zip(p50s[WORKBENCH], p50s[DIRECT], p50s[SDK_HTTP], strict=True)
    ]
    out.append(
        check(SECTION, "p50 Workbench / (a + b), median of block ratios", median(over_ab), 1.0)
    )
    out.append(
        Row(
            SECTION,
            "p50 Workbench - (a + b): what the gateway adds (ms)",
            f"{median(p50s[WORKBENCH]) - median(p50s[DIRECT]) - median(p50s[SDK_HTTP]):.2f}",
        )
    )
    over_use_tool = [
        endpoint / wb for endpoint, wb in zip(p50s[TOOLBOX_ENDPOINT], p50s[WORKBENCH], strict=True)
    ]
    out.append(
        check(
            SECTION,
            "p50 toolbox endpoint / Workbench (use_tool), median of block ratios",
            median(over_use_tool),
            1.1,
        )
    )
    if FASTMCP in samples:
        over_fastmcp = [wb / f for wb, f in zip(p50s[WORKBENCH], p50s[FASTMCP], strict=True)]
        out.append(
            check(
                SECTION,
                "p50 Workbench / FastMCP proxy, median of block ratios",
                median(over_fastmcp),
                0.7,
            )
        )
    else:
        out.append(Row(SECTION, "p50 Workbench / FastMCP proxy", "not measured", "≤ 0.7", "n/a"))
    return out


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--block-calls", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--no-fastmcp", action="store_true", help="skip the FastMCP path")
    options = parser.parse_args()
    if options.quick:
        options.blocks, options.block_calls, options.warmup = 2, 3, 1
    notes: dict[str, str] = {}
    if options.quick or options.no_fastmcp:
        notes[FASTMCP] = "skipped (--quick / --no-fastmcp)"
    elif missing := fastmcp_missing():
        notes[FASTMCP] = missing
    with servers(FASTMCP not in notes, notes) as urls:
        samples = anyio.run(measure, urls, options.blocks, options.block_calls, options.warmup)
    title = (
        f"Call latency: {options.blocks} blocks of {options.block_calls} sequential calls "
        f"per path, after {options.warmup} warm-up calls"
    )
    report(rows(samples, notes.get(FASTMCP)), options.json, title)


if __name__ == "__main__":
    main()
