"""Latency of `use_tool` through Workbench beside the same call made directly over stdio.

    .venv/bin/python bench/latency.py [--calls 200] [--warmup 20]

Starts a gateway process (uvicorn, SQLite in a temp dir) with one toolbox holding
`mcp-server-time`, then makes sequential calls to `get_current_time` on one client session:
first directly over stdio, then through the gateway. Prints p50/p90/p99 in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.gateway_process import Deployment  # noqa: E402

TIME_SERVER = [sys.executable, "-m", "mcp_server_time"]
ARGS = {"timezone": "Etc/UTC"}

SETUP = f"""
from toolboxes.models import ApiKey, Server, Tenant, Toolbox
tenant = Tenant.objects.create(slug="bench")
toolbox = Toolbox.objects.create(tenant=tenant, name="bench", description="benchmark")
Server.objects.create(toolbox=toolbox, name="time", command={TIME_SERVER[0]!r},
                      args={TIME_SERVER[1:]!r})
print(ApiKey.issue(tenant)[1])
"""


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49], cuts[89], cuts[98]


async def measure(call: Callable[[], Awaitable[object]], calls: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        await call()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def direct(calls: int, warmup: int) -> list[float]:
    params = StdioServerParameters(command=TIME_SERVER[0], args=TIME_SERVER[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await measure(lambda: session.call_tool("get_current_time", ARGS), calls, warmup)


async def through_gateway(url: str, key: str, calls: int, warmup: int) -> list[float]:
    call = {"tool": {"toolbox": "bench", "server": "time", "name": "get_current_time"}}
    call["arguments"] = ARGS
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        opened = await session.call_tool("open_toolbox", {"toolbox": "bench"})
        assert not opened.is_error, opened
        result = await session.call_tool("use_tool", call)
        assert not result.is_error, result
        return await measure(lambda: session.call_tool("use_tool", call), calls, warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        deployment = Deployment(Path(workdir), env_extra={"LOG_LEVEL": "WARNING"})
        deployment.manage("migrate", "-v0")
        key = deployment.shell(SETUP).split()[-1]
        process, url, _ = deployment.start_gateway("gateway", "--no-access-log")
        try:
            rows = {
                "direct stdio": anyio.run(direct, options.calls, options.warmup),
                "through Workbench": anyio.run(
                    through_gateway, url, key, options.calls, options.warmup
                ),
            }
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(f"\n{options.calls} sequential calls to mcp-server-time get_current_time (ms)\n")
    print("| path | p50 | p90 | p99 |")
    print("| --- | ---: | ---: | ---: |")
    for name, samples in rows.items():
        p50, p90, p99 = percentiles(samples)
        print(f"| {name} | {p50:.2f} | {p90:.2f} | {p99:.2f} |")
    direct_p50 = percentiles(rows["direct stdio"])[0]
    gateway_p50 = percentiles(rows["through Workbench"])[0]
    print(f"\nWorkbench adds {gateway_p50 - direct_p50:.2f} ms at p50.")


if __name__ == "__main__":
    main()
