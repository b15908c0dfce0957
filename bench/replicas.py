"""Replicas behind HAProxy (deploy/haproxy.cfg as shipped): tenant placement, a rolling
restart and a kill -9, with several tenants' sessions calling all along (issue 23).

Three gateway processes share one database (SQLite in WAL, or DATABASE_URL) and one shared
store (Redis when reachable, else the embedded one): replicas on one machine. Each tenant
has a toolbox with one stdio server (tests/servers/fixture_server.py, marked per tenant)
and its clients use /mcp/t/<tenant-slug>.

1. Placement: the same sessions through HAProxy with round-robin, then with the shipped
   per-tenant hash; the downstream server processes counted in all.
2. Rolling restart (hash): each replica in turn drained in HAProxy (runtime API), sent
   SIGTERM (it drains itself too), started again, made ready again, under load.
3. kill -9 of one replica under load: the calls lost (only those in flight on it), and how
   long until its tenants are served by another replica.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    GATEWAY_ENV,
    HTTP_TIMEOUT,
    ROOT,
    UVICORN_OPTIONS,
    Deployment,
    Row,
    arguments,
    cmdline,
    descendants,
    free_port,
    listening,
    migrated_template,
    redis_reachable,
    report,
    stop,
    wait_until,
)

SECTION = "11 replicas"
HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"
FIXTURE = ROOT / "tests" / "servers" / "fixture_server.py"
REPLICAS = 3
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")
SEED = """
from toolboxes.models import ApiKey, Server, Tenant, Toolbox
for slug in {slugs!r}:
    tenant = Tenant.objects.create(slug=slug)
    toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev")
    Server.objects.create(toolbox=toolbox, name="fixture", command={python!r},
                          args=[{fixture!r}, "--prefix", "wb-replica-" + slug + ":"])
    print("KEY", slug, ApiKey.issue(tenant)[1])
"""
ECHO = {"tool": {"toolbox": "dev", "server": "fixture", "name": "echo"}, "arguments": {}}


def leaf(exc: BaseException) -> BaseException:
    """The exception inside the client's task groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def described(slug: str, exc: BaseException) -> str:
    inner = leaf(exc)
    return f"{slug}: {type(inner).__name__}: {inner}"[:200]


def marker(slug: str) -> str:
    return f"wb-replica-{slug}:"


@dataclass
class Replicas:
    """Three gateways of one deployment, each on a fixed port (a restart keeps it)."""

    deployment: Deployment
    ports: list[int]
    processes: list[subprocess.Popen[bytes] | None] = field(default_factory=list)

    def start(self, index: int) -> None:
        options = [*UVICORN_OPTIONS, "--timeout-graceful-shutdown", "30"]
        process, _, _ = self.deployment.start_gateway(
            f"r{index + 1}", *options, port=self.ports[index]
        )
        self.processes[index] = process

    def start_all(self) -> None:
        self.processes = [None] * len(self.ports)
        for index in range(len(self.ports)):
            self.start(index)

    def stop(self, index: int, *, graceful: bool = True) -> None:
        process = self.processes[index]
        if process is not None:
            stop(process, graceful=graceful)
            self.processes[index] = None

    def stop_all(self) -> None:
        for index in range(len(self.ports)):
            self.stop(index)

    def servers(self, slug: str) -> dict[int, int]:
        """Replica index -> how many of the tenant's downstream servers it runs."""
        counts: dict[int, int] = {}
        for index, process in enumerate(self.processes):
            if process is None:
                continue
            running = [
                pid
                for pid in descendants(process.pid)
                if marker(slug) in cmdline(pid) and not cmdline(pid).startswith("bwrap")
            ]
            if running:
                counts[index] = len(running)
        return counts


@contextmanager
def haproxy(workdir: Path, ports: list[int], *, round_robin: bool) -> Iterator[tuple[str, Path]]:
    """HAProxy with the shipped configuration (or round-robin in its stead): its
    address and runtime socket."""
    text = HAPROXY_CFG.read_text()
    if round_robin:
        text = text.replace("    balance uri path-only depth 3\n", "    balance roundrobin\n")
        text = text.replace("    hash-type consistent\n", "").replace(
            "    hash-balance-factor 150\n", ""
        )
    config = workdir / ("haproxy-rr.cfg" if round_robin else "haproxy.cfg")
    config.write_text(text)
    port = free_port()
    sock = workdir / f"haproxy-{port}.sock"
    env = {
        **os.environ,
        "WORKBENCH_LB_BIND": f"127.0.0.1:{port}",
        "WORKBENCH_LB_SOCKET": str(sock),
        **{f"WORKBENCH_REPLICA_{i + 1}": f"127.0.0.1:{p}" for i, p in enumerate(ports)},
    }
    log = workdir / f"haproxy-{port}.log"
    process = subprocess.Popen(
        ["haproxy", "-db", "-f", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    try:
        wait_until(lambda: listening(port) or process.poll() is not None, 30, "haproxy")
        if process.poll() is not None:
            raise RuntimeError(f"haproxy exited at start: {log.read_text()[-2000:]}")
        wait_until(lambda: all_up(sock, len(ports)), 30, "haproxy to see every replica up")
        yield f"http://127.0.0.1:{port}", sock
    finally:
        process.terminate()
        process.wait(timeout=10)


def runtime(sock: Path, command: str) -> str:
    """One command on HAProxy's runtime API."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(5)
        client.connect(str(sock))
        client.sendall(command.encode() + b"\n")
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def states(sock: Path) -> dict[str, str]:
    """Server name -> its operational state as HAProxy sees it (2: up)."""
    lines = runtime(sock, "show servers state replicas").splitlines()
    found = {}
    for line in lines[2:]:
        fields = line.split()
        if len(fields) > 5:
            found[fields[3]] = fields[5]
    return found


def all_up(sock: Path, count: int) -> bool:
    with suppress(OSError):
        found = states(sock)
        return len(found) == count and all(state == "2" for state in found.values())
    return False


@asynccontextmanager
async def tenant_session(base: str, slug: str, key: str) -> AsyncIterator[ClientSession]:
    """A client session at the tenant's own endpoint, through the balancer, toolbox open."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT) as http,
        streamable_http_client(f"{base}/mcp/t/{slug}", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        opened = await session.call_tool("open_toolbox", {"toolbox": "dev"})
        if opened.is_error:
            raise RuntimeError(f"open: {opened.content}")
        yield session


@dataclass
class Load:
    """Sessions of every tenant calling through the balancer until stopped; each failed
    call is counted, and its session replaced."""

    base: str
    keys: dict[str, str]
    sessions_per_tenant: int
    ok: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)
    running: bool = True

    async def tenant_loop(self, slug: str) -> None:
        while self.running:
            try:
                async with tenant_session(self.base, slug, self.keys[slug]) as session:
                    while self.running:
                        result = await session.call_tool("use_tool", ECHO)
                        if result.is_error:
                            raise RuntimeError(f"use_tool: {result.content}")
                        self.ok += 1
            except Exception as exc:  # a lost call: counted, and a new session
                if self.running:
                    self.failed += 1
                    self.failures.append(described(slug, exc))

    async def run_while(self, action: Coroutine[Any, Any, None]) -> None:
        """Call until `action` (the fault) is done."""
        loops = [
            asyncio.create_task(self.tenant_loop(slug))
            for slug in self.keys
            for _ in range(self.sessions_per_tenant)
        ]
        try:
            await action
        finally:
            self.running = False
            await asyncio.wait(loops, timeout=HTTP_TIMEOUT)


async def sessions_once(base: str, keys: dict[str, str], per_tenant: int) -> Load:
    """Each tenant: `per_tenant` sessions, each opening the toolbox and calling once."""
    load = Load(base, keys, 1)

    async def one(slug: str) -> None:
        try:
            async with tenant_session(base, slug, keys[slug]) as session:
                result = await session.call_tool("use_tool", ECHO)
                load.ok += not result.is_error
                load.failed += result.is_error
        except Exception as exc:  # counted and shown, not fatal to the measurement
            load.failed += 1
            load.failures.append(described(slug, exc))

    await asyncio.gather(*(one(slug) for slug in keys for _ in range(per_tenant)))
    return load


def placement(replicas: Replicas, keys: dict[str, str]) -> tuple[int, int]:
    """(server processes in all, tenants whose servers run on one replica)."""
    total, placed = 0, 0
    for slug in keys:
        counts = replicas.servers(slug)
        total += sum(counts.values())
        placed += len(counts) == 1
    return total, placed


async def rolling_restart(replicas: Replicas, sock: Path, count: int) -> None:
    """Restart the first `count` replicas, one after the other."""
    for index in range(count):
        name = f"replicas/r{index + 1}"
        runtime(sock, f"set server {name} state drain")
        await asyncio.to_thread(replicas.stop, index)  # SIGTERM: it drains itself too
        await asyncio.to_thread(replicas.start, index)
        await asyncio.to_thread(
            wait_until, lambda port=replicas.ports[index]: ready(port), 30, "replica ready"
        )
        runtime(sock, f"set server {name} state ready")
        await asyncio.to_thread(
            wait_until, lambda: all_up(sock, len(replicas.ports)), 30, "replica up in haproxy"
        )


def ready(port: int) -> bool:
    with suppress(httpx2.HTTPError):
        return httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    return False


async def kill_one(replicas: Replicas, sock: Path, seconds: float) -> float:
    """kill -9 the first replica; seconds until HAProxy marks it down."""
    await asyncio.sleep(seconds / 2)  # load running before the fault (a measurement's pace)
    process = replicas.processes[0]
    assert process is not None
    killed = time.monotonic()
    process.send_signal(signal.SIGKILL)
    await asyncio.to_thread(
        wait_until, lambda: states(sock).get("r1") != "2", 30, "haproxy to mark r1 down"
    )
    down = time.monotonic() - killed
    await asyncio.sleep(seconds / 2)
    return down


def faults(
    replicas: Replicas,
    base: str,
    sock: Path,
    keys: dict[str, str],
    rows: list[Row],
    *,
    quick: bool,
) -> None:
    """The rolling restart (of one replica with --quick), then the kill -9, each under
    every tenant's calls."""
    seconds = 2 if quick else 20
    restarted = 1 if quick else len(replicas.ports)
    load = Load(base, keys, 1)

    async def restart() -> None:
        await asyncio.sleep(1)  # the load running before the first replica goes
        await rolling_restart(replicas, sock, restarted)

    started = time.monotonic()
    asyncio.run(load.run_while(restart()))
    took = time.monotonic() - started
    verdict = "PASS" if load.failed == 0 else "MISS"
    rows.append(
        Row(
            SECTION,
            f"rolling restart of {restarted}: calls ok / failed",
            f"{load.ok} / {load.failed}",
            "0 failed",
            verdict,
        )
    )
    rows.append(Row(SECTION, f"rolling restart of {restarted}: took (s)", f"{took:.1f}"))
    rows += [Row(SECTION, "rolling restart: a failed call", text) for text in load.failures[:3]]
    killed = Load(base, keys, 1)
    down: list[float] = []

    async def kill() -> None:
        down.append(await kill_one(replicas, sock, seconds))

    asyncio.run(killed.run_while(kill()))
    rows.append(Row(SECTION, "kill -9: calls ok / failed", f"{killed.ok} / {killed.failed}"))
    rows.append(Row(SECTION, "kill -9: until haproxy marked it down (s)", f"{down[0]:.1f}"))
    rows += [Row(SECTION, "kill -9: a lost call", text) for text in killed.failures[:3]]


def main() -> None:
    parser = arguments(__doc__ or "")
    parser.add_argument("--tenants", type=int, default=None)
    options = parser.parse_args()
    tenants = options.tenants or (3 if options.quick else 12)
    per_tenant = 2 if options.quick else 4
    rows: list[Row] = []
    if shutil.which("haproxy") is None:
        rows.append(Row(SECTION, "not measured", "haproxy is not installed (make haproxy)"))
        report(rows, options.json, "Replicas behind HAProxy")
        return
    slugs = [f"t{index:02d}" for index in range(tenants)]
    with tempfile.TemporaryDirectory(prefix="wb-replicas-") as tmp:
        workdir = Path(tmp)
        cache_url = ""
        if redis_reachable(REDIS_URL):
            cache_url = f"{REDIS_URL}/{11}"
            import redis

            redis.Redis.from_url(cache_url).flushdb()
        env = {**GATEWAY_ENV, "WORKBENCH_DRAIN_SECONDS": "1" if options.quick else "3"}
        deployment = Deployment(workdir, cache_url=cache_url, env_extra=env)
        shutil.copyfile(migrated_template(), workdir / "gateway.sqlite3")
        seeded = deployment.shell(
            SEED.format(slugs=slugs, python=sys.executable, fixture=str(FIXTURE))
        )
        keys = {
            line.split()[1]: line.split()[2]
            for line in seeded.splitlines()
            if line.startswith("KEY ")
        }
        store = "Redis" if cache_url else "the embedded store"
        rows.append(Row(SECTION, "set-up", f"{REPLICAS} replicas, {tenants} tenants, {store}"))
        replicas = Replicas(deployment, [free_port() for _ in range(REPLICAS)])
        try:
            # --quick (the smoke test): the shipped configuration only.
            for round_robin in (False,) if options.quick else (True, False):
                replicas.start_all()
                with haproxy(workdir, replicas.ports, round_robin=round_robin) as (base, sock):
                    opened = asyncio.run(sessions_once(base, keys, per_tenant))
                    total, placed = placement(replicas, keys)
                    mode = "round-robin" if round_robin else "per-tenant hash"
                    rows.append(
                        Row(
                            SECTION,
                            f"{mode}: sessions ok / failed",
                            f"{opened.ok} / {opened.failed}",
                        )
                    )
                    rows += [
                        Row(SECTION, f"{mode}: a failed session", f) for f in opened.failures[:3]
                    ]
                    rows.append(Row(SECTION, f"{mode}: downstream servers in all", str(total)))
                    rows.append(
                        Row(SECTION, f"{mode}: tenants on one replica", f"{placed}/{tenants}")
                    )
                    if round_robin:
                        replicas.stop_all()
                        continue
                    faults(replicas, base, sock, keys, rows, quick=options.quick)
        finally:
            replicas.stop_all()
    report(rows, options.json, "Replicas behind HAProxy")


if __name__ == "__main__":
    main()
