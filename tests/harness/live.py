"""A real gateway in this process for end-to-end tests (uvicorn on a free loopback port, in
a thread), and the tenants they set up. Imports Django: tests only, never the benchmarks.

The server shares the test database and cache; clients are the SDK's own, over real
Streamable HTTP, and downstreams are real processes. Nothing here lets the ORM run on an
event loop: the gateway's loop refuses it (Django's async-safety guard is on), and test
bodies set data up in sync fixtures or through the `a...` variants (`sync_to_async`).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2
import uvicorn
from asgiref.sync import sync_to_async
from django.core.asgi import get_asgi_application
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.harness.paths import FIXTURE_SERVER, HOSTILE_SERVER, RELAY_PROBE
from tests.harness.waits import wait_until
from toolboxes.models import ApiKey, Server, Tenant, Toolbox
from workbench_site.gateway_app import build_application

STARTUP_TIMEOUT = 20.0
SHUTDOWN_TIMEOUT = 30.0
T = TypeVar("T")


@dataclass
class LiveGateway:
    """Clients of a gateway at `url`; `app` and `loop` are the in-process gateway's (None
    when the gateway is another process)."""

    url: str
    app: Any = None
    loop: asyncio.AbstractEventLoop | None = None

    @property
    def gateway(self) -> Any:
        """The running gateway's parts (`mcp_gateway.assembly.GatewayParts`)."""
        return self.app.gateway.parts

    def run_on_loop(self, coroutine: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        """Run a coroutine on the gateway's own event loop (from a sync test)."""
        assert self.loop is not None, "the gateway runs in another process"
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    @asynccontextmanager
    async def session(
        self, key: str | None, headers: dict[str, str] | None = None, **callbacks: Any
    ) -> AsyncIterator[ClientSession]:
        """A 2025-11-25 client session (initialize handshake, Mcp-Session-Id); `callbacks`
        as `ClientSession` takes them (`logging_callback`, `message_handler`, ...)."""
        all_headers = {"Authorization": f"Bearer {key}"} if key else {}
        all_headers.update(headers or {})
        async with (
            httpx2.AsyncClient(headers=all_headers, timeout=60) as http,
            streamable_http_client(self.url, http_client=http) as (read, write, *_),
            ClientSession(read, write, **callbacks) as session,
        ):
            await session.initialize()
            yield session

    @asynccontextmanager
    async def client(
        self, key: str, header: str = "Authorization", **options: Any
    ) -> AsyncIterator[Client]:
        """A 2026-07-28 client (mcp.Client's default: stateless, server/discover); `options`
        as `mcp.Client` takes them (`log_level`, `logging_callback`, ...)."""
        value = f"Bearer {key}" if header == "Authorization" else key
        async with (
            httpx2.AsyncClient(headers={header: value}, timeout=60) as http,
            Client(streamable_http_client(self.url, http_client=http), **options) as client,
        ):
            yield client


@dataclass
class RunningGateway:
    """uvicorn serving the gateway app on its own thread and event loop."""

    server: uvicorn.Server
    thread: threading.Thread
    live: LiveGateway

    def stop(self) -> None:
        # As the process does on SIGINT (`drain.install`'s ending): open listen streams end
        # first, since uvicorn waits for every open response.
        assert self.live.loop is not None
        self.live.loop.call_soon_threadsafe(self.live.app.gateway.end_streams)
        self.server.should_exit = True
        self.thread.join(timeout=SHUTDOWN_TIMEOUT)
        assert not self.thread.is_alive(), f"uvicorn did not shut down within {SHUTDOWN_TIMEOUT}s"


def start_gateway() -> RunningGateway:
    app = build_application(get_asgi_application())
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    loops: list[asyncio.AbstractEventLoop] = []

    async def serve() -> None:
        loops.append(asyncio.get_running_loop())
        await server.serve()

    def run() -> None:
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            runner.run(serve())

    thread = threading.Thread(target=run, name="uvicorn", daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), STARTUP_TIMEOUT, "uvicorn to start")
    assert server.started, "uvicorn did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    live = LiveGateway(url=f"http://127.0.0.1:{port}/mcp", app=app, loop=loops[0])
    return RunningGateway(server, thread, live)


@contextmanager
def running_gateway() -> Iterator[LiveGateway]:
    """A live gateway in this process (`start_gateway`) for the length of the block."""
    running = start_gateway()
    try:
        yield running.live
    finally:
        running.stop()


@dataclass
class TenantSetup:
    """A tenant with one API key. The plain methods are for sync fixtures and tests; from
    an `async def` test, await the `a...` variants (the ORM never runs on an event loop)."""

    tenant: Tenant
    key: str
    api_key: ApiKey

    def toolbox(self, name: str = "dev", description: str | None = None) -> Toolbox:
        return Toolbox.objects.create(
            tenant=self.tenant, name=name, description=description or f"{name} tools"
        )

    def hostile_server(self, toolbox: str, **fields: Any) -> Server:
        """A server named `hostile`, running tests/servers/hostile_server.py (which tries
        every escape it is asked to), in a new toolbox of that name."""
        server = Server(
            toolbox=self.toolbox(toolbox),
            name="hostile",
            command=sys.executable,
            args=[HOSTILE_SERVER],
            **fields,
        )
        server.full_clean()
        server.save()
        return server

    def fixture_server(
        self, toolbox: Toolbox, name: str, *args: str, position: int = 0, **fields: Any
    ) -> Server:
        """A server running tests/servers/fixture_server.py with args."""
        server = Server(
            toolbox=toolbox,
            name=name,
            position=position,
            command=sys.executable,
            args=[FIXTURE_SERVER, *args],
            **fields,
        )
        server.full_clean()
        server.save()
        return server

    def new_key(self, **key_options: Any) -> TenantSetup:
        """The same tenant with a key of its own: what a key opened is that key's alone, so
        a test of a module sharing one tenant starts with nothing open."""
        return issue_key(self.tenant, **key_options)

    async def atoolbox(self, name: str = "dev", description: str | None = None) -> Toolbox:
        return await sync_to_async(self.toolbox)(name, description)

    async def afixture_server(
        self, toolbox: Toolbox, name: str, *args: str, position: int = 0, **fields: Any
    ) -> Server:
        return await sync_to_async(self.fixture_server)(
            toolbox, name, *args, position=position, **fields
        )


def issue_key(tenant: Tenant, **key_options: Any) -> TenantSetup:
    """`tenant` with a new key (options as `ApiKey.issue` takes)."""
    api_key, key = ApiKey.issue(tenant, label="test", **key_options)
    return TenantSetup(tenant, key, api_key)


def make_tenant_setup(slug: str = "acme", **key_options: Any) -> TenantSetup:
    """A tenant named after its slug, with one key (options as `ApiKey.issue` takes)."""
    return issue_key(Tenant.objects.create(slug=slug, name=slug.title()), **key_options)


def add_relay_probe(toolbox: Toolbox, name: str = "probe", **fields: Any) -> Server:
    """A server running tests/servers/relay_probe.py (what a gateway relays, issue 34)."""
    server = Server(
        toolbox=toolbox, name=name, command=sys.executable, args=[RELAY_PROBE], **fields
    )
    server.full_clean()
    server.save()
    return server
