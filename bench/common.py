"""What every benchmark script shares: a seeded gateway process, clients, processes, figures.

Each script under bench/ does one job and reports `Row`s: it prints them as a markdown
table, and with `--json FILE` writes them for `run_all.py`, which joins every script's rows
into the one table of `make bench`. A benchmark reports; it never fails on speed. Every
wait is bounded and every process started here is stopped in a `finally`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The harness the tests share (its Django-free modules); some names only re-exported here
# for the bench scripts.
from tests.harness.deployment import (  # noqa: E402 - needs ROOT on sys.path
    Deployment,
    migrated_template,
)
from tests.harness.net import free_port, listening  # noqa: E402
from tests.harness.procs import (  # noqa: E402, F401
    cmdline,
    cpu_seconds,
    descendants,
    descendants_running,
    rss_kib,
)
from tests.harness.services import redis_reachable  # noqa: E402, F401
from tests.harness.waits import wait_until  # noqa: E402

BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
FASTMCP_PYTHON = BENCH / ".fastmcp-venv" / "bin" / "python"
NODE_BIN = ROOT / "tests" / "node_modules" / ".bin"
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")

TIME_MODULE = "mcp_server_time"
TIME_ARGS = {"timezone": "Etc/UTC"}
TOOLBOX = "bench"
TENANT = "bench"
# Every server measured here runs on the same event loop and HTTP parser: what `make run`
# serves the gateway with (uvloop, httptools; the gateway's with its bound on a request's
# head, workbench_site.http_protocol). bench/sdk_server.py and fastmcp_proxy.py use
# SERVER_LOOP and SERVER_HTTP.
UVICORN_OPTIONS = (
    "--no-access-log",
    "--loop",
    "uvloop",
    "--http",
    "workbench_site.http_protocol:BoundedHttpToolsProtocol",
)
SERVER_LOOP, SERVER_HTTP = "uvloop", "httptools"
STOP_TIMEOUT = 30.0
HTTP_TIMEOUT = 60.0
# Rate limits stay on (every call is checked against its buckets, as shipped) with rates
# no benchmark reaches: a check costs the same whatever the numbers, and a benchmark of
# refused calls measures nothing.
# The in-flight bound too: the concurrency benchmark's 100 sessions share one key, and
# requests refused with 429 would be measured as cheap calls.
RATE_LIMITS = {
    **{
        f"WORKBENCH_{scope}_RATE_{part}": "1000000"
        for scope in ("TENANT", "KEY", "OPEN_TENANT", "OPEN_KEY")
        for part in ("LIMIT", "BURST")
    },
    "WORKBENCH_KEY_MAX_IN_FLIGHT": "1000000",
}
# Gateways run as in production: DEBUG off (Django's debug cursor, which records every
# query, is a development aid), warnings only in the log, the rate limits above.
GATEWAY_ENV = {
    "DEBUG": "false",
    "ALLOWED_HOSTS": "127.0.0.1,localhost",
    "LOG_LEVEL": "WARNING",
    **RATE_LIMITS,
}


# Figures


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear between closest ranks (numpy's default)."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def p50_p90_p99(samples: Sequence[float]) -> tuple[float, float, float]:
    return percentile(samples, 50), percentile(samples, 90), percentile(samples, 99)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ms(values: Sequence[float]) -> str:
    return " / ".join(f"{value:.2f}" for value in values)


@dataclass
class Row:
    """One line of the results table; `verdict` is PASS or MISS when there is a target."""

    section: str
    figure: str
    value: str
    target: str = ""
    verdict: str = ""


def check(
    section: str,
    figure: str,
    value: float,
    limit: float,
    *,
    unit: str = "",
    at_most: bool = True,
    digits: int = 2,
) -> Row:
    """A row measured against a target: PASS/MISS beside the figure, never an assertion."""
    ok = value <= limit if at_most else value >= limit
    sign = "≤" if at_most else "≥"
    return Row(
        section,
        figure,
        f"{value:.{digits}f}{unit}",
        f"{sign} {limit:g}{unit}",
        "PASS" if ok else "MISS",
    )


def markdown(rows: Sequence[Row]) -> str:
    lines = ["| benchmark | figure | measured | target | |", "| --- | --- | ---: | ---: | --- |"]
    lines += [f"| {r.section} | {r.figure} | {r.value} | {r.target} | {r.verdict} |" for r in rows]
    return "\n".join(lines)


def arguments(doc: str) -> argparse.ArgumentParser:
    """The options every script has: --quick (the smoke test's size) and --json FILE."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few calls only (smoke test)")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    return parser


def report(rows: Sequence[Row], json_path: Path | None, title: str) -> None:
    print(f"\n{title}\n\n{markdown(rows)}\n", flush=True)
    if json_path is not None:
        json_path.write_text(json.dumps([asdict(row) for row in rows], indent=1))


# Processes


def stop(process: subprocess.Popen[Any], *, graceful: bool = True) -> None:
    """Stop a process we started and anything it left behind, by pid, within a bound."""
    if process.poll() is not None:
        return
    left = {pid: cmdline(pid) for pid in descendants(process.pid)}
    process.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT)
    deadline = time.monotonic() + 5
    for pid, command in left.items():
        while cmdline(pid) == command and time.monotonic() < deadline:
            time.sleep(0.05)  # children of a graceful stop exit on their own, shortly
        if cmdline(pid) == command:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextmanager
def serving(command: Sequence[str], port: int, name: str) -> Iterator[subprocess.Popen[bytes]]:
    """A server process listening on a loopback port, stopped on the way out."""
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            list(command), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL
        )
        try:
            wait_until(
                lambda: listening(port) or process.poll() is not None, 60, f"{name} to listen"
            )
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{name} exited: {log.read().decode(errors='replace')[-2000:]}")
            yield process
        finally:
            stop(process)


@contextmanager
def sdk_server(*options: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """bench/sdk_server.py (the SDK alone, options as it takes them): its URL and process."""
    port = free_port()
    command = [sys.executable, str(BENCH / "sdk_server.py"), "--port", str(port), *options]
    with serving(command, port, "sdk server") as process:
        yield f"http://127.0.0.1:{port}/mcp", process


# A seeded gateway


@dataclass(frozen=True)
class StdioServer:
    """One downstream stdio server of the benchmark toolbox."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)  # more Server fields (network, ...)


def time_server(name: str = "time") -> StdioServer:
    return StdioServer(name, sys.executable, ("-m", TIME_MODULE))


def gateway_sandbox_policy(workdir: Path) -> Any:
    """This process's sandbox policy as a gateway's: the gateway's own settings, as a
    deployment in `workdir` has them (production defaults, no egress allowance); handed to
    each spawn, as the gateway hands its own."""
    os.environ.update(Deployment(workdir, env_extra=GATEWAY_ENV).env)
    from mcp_gateway import SandboxPolicy

    return SandboxPolicy.from_settings()


@asynccontextmanager
async def gateway_stdio_session(
    command: str, args: list[str], policy: Any, spec: Any = None
) -> AsyncIterator[ClientSession]:
    """An initialized session with a stdio server started as the gateway starts it
    (downstream/transports.py): in the sandbox `spec` under `policy`, or, `spec` None, as
    a plain child process."""
    from mcp.client.stdio import get_default_environment

    from mcp_gateway import SANDBOX_HOME, bounded_stdio_client, sandbox_launch

    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": SANDBOX_HOME}
    if spec is None:
        params = StdioServerParameters(command=command, args=args, env=base)
    else:
        extra = sorted(set(get_default_environment()) - set(base) | {"PWD"})
        argv = sandbox_launch(command, args, base, None, spec, policy, unset=extra).argv
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=base)
    with open(os.devnull, "w") as errlog:
        async with (
            bounded_stdio_client(params, errlog, 1 << 20, 1 << 20, sandbox=spec, policy=policy) as (
                read,
                write,
            ),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


DB_TEMPLATE = "BENCH_DB_TEMPLATE"  # a migrated SQLite file to start from, if set
SEED = """
import json
from django.core.management import call_command
from toolboxes.models import ApiKey, Server, Tenant, Toolbox
if {migrate}:
    call_command("migrate", verbosity=0)
tenant = Tenant.objects.create(slug={tenant!r})
for toolbox_name, servers in json.loads({toolboxes!r}).items():
    toolbox = Toolbox.objects.create(tenant=tenant, name=toolbox_name, description="benchmark")
    for position, server in enumerate(servers):
        Server.objects.create(toolbox=toolbox, position=position, **server)
print("KEY=" + ApiKey.issue(tenant)[1])
"""


@dataclass
class Gateway:
    """A running gateway: uvicorn serving workbench_site.asgi, SQLite in a temp dir."""

    url: str
    key: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def downstream(self, marker: str = TIME_MODULE) -> list[int]:
        """The downstream processes whose command line holds marker, with the bubblewrap
        processes that sandbox them (whose own command lines hold it too)."""
        return descendants_running(self.pid, marker)

    def servers(self, marker: str = TIME_MODULE) -> list[int]:
        """The downstream servers themselves: one per connection, sandboxed or not."""
        return [pid for pid in self.downstream(marker) if not cmdline(pid).startswith("bwrap")]

    def all_pids(self) -> list[int]:
        return [self.pid, *descendants(self.pid)]

    def own_pids(self) -> list[int]:
        """The gateway's processes without its downstream servers (and their sandboxes)."""
        downstream = self.downstream()
        return [pid for pid in self.all_pids() if pid not in downstream]


@contextmanager
def gateway(
    toolboxes: dict[str, list[StdioServer]] | None = None,
    *,
    workers: int = 1,
    cache_url: str | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Gateway]:
    """Start a gateway with tenant `bench`, the given toolboxes (default: `bench` holding
    mcp-server-time as `time`) and one API key; stop it (and its children) on the way out."""
    toolboxes = toolboxes or {TOOLBOX: [time_server()]}
    seed = {
        name: [
            {"name": s.name, "command": s.command, "args": list(s.args), "env": s.env, **s.fields}
            for s in servers
        ]
        for name, servers in toolboxes.items()
    }
    with tempfile.TemporaryDirectory(prefix="wb-bench-") as workdir:
        deployment = Deployment(
            Path(workdir),
            cache_url=cache_url or "",
            env_extra={**GATEWAY_ENV, **(env or {})},
        )
        template = os.environ.get(DB_TEMPLATE)
        if template:
            shutil.copyfile(template, Path(workdir) / "gateway.sqlite3")
        script = SEED.format(migrate=not template, tenant=TENANT, toolboxes=json.dumps(seed))
        out = deployment.shell(script)
        key = out.split("KEY=", 1)[1].split()[0]
        options = [*UVICORN_OPTIONS] + (["--workers", str(workers)] if workers > 1 else [])
        process, url, log = deployment.start_gateway("gateway", *options)
        try:
            yield Gateway(url, key, process, log)
        finally:
            stop(process)


@contextmanager
def database_template() -> Iterator[None]:
    """One migrated SQLite file that every gateway started meanwhile (here or in child
    processes) copies, instead of each migrating its own: seconds saved per gateway (the
    test harness's template, made once per set of migrations). One already named in the
    environment is used as it is."""
    if os.environ.get(DB_TEMPLATE):
        yield
        return
    os.environ[DB_TEMPLATE] = str(migrated_template())
    try:
        yield
    finally:
        os.environ.pop(DB_TEMPLATE, None)


def in_fastmcp_venv(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str] | None:
    """Run Python code with FastMCP's own virtualenv (never ours); None when it is missing."""
    if not FASTMCP_PYTHON.exists():
        return None
    return subprocess.run(
        [str(FASTMCP_PYTHON), "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# Clients


def use_call(
    server: str = "time", name: str = "get_current_time", args: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`use_tool` arguments for a tool of the benchmark toolbox."""
    return {
        "tool": {"toolbox": TOOLBOX, "server": server, "name": name},
        "arguments": TIME_ARGS if args is None else args,
    }


def checked(result: types.CallToolResult) -> types.CallToolResult:
    """A benchmark of failing calls measures nothing: stop at the first error result."""
    if result.is_error:
        raise RuntimeError(f"tool call failed: {result.content}")
    return result


@asynccontextmanager
async def http_session(
    url: str, headers: dict[str, str] | None = None, *, terminate_on_close: bool = True
) -> AsyncIterator[ClientSession]:
    """A 2025-11-25 SDK client session over Streamable HTTP (initialize handshake), with an
    HTTP client of its own, as a separate MCP client would have."""
    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=HTTP_TIMEOUT) as http,
        streamable_http_client(url, http_client=http, terminate_on_close=terminate_on_close) as (
            read,
            write,
            *_,
        ),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        # As MCP clients do; it also fills the SDK's output-schema cache, which a first
        # call_tool would otherwise fill with a tools/list of its own inside the timing.
        await session.list_tools()
        yield session


@asynccontextmanager
async def stdio_session() -> AsyncIterator[ClientSession]:
    """An SDK client session with `python -m mcp_server_time` over stdio, unsandboxed: the
    downstream call without any gateway."""
    params = StdioServerParameters(command=sys.executable, args=["-m", TIME_MODULE])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def gateway_session(
    url: str, key: str, *, open_toolbox: str | None = TOOLBOX, terminate_on_close: bool = True
) -> AsyncIterator[ClientSession]:
    """An SDK client session through the gateway, with a toolbox already opened."""
    headers = {"Authorization": f"Bearer {key}"}
    async with http_session(url, headers, terminate_on_close=terminate_on_close) as session:
        if open_toolbox:
            checked(await session.call_tool("open_toolbox", {"toolbox": open_toolbox}))
        yield session


async def timed(call: Callable[[], Awaitable[object]], count: int) -> list[float]:
    """Milliseconds of each of count sequential calls."""
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples
