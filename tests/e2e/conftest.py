"""A real gateway for end-to-end tests: uvicorn on a free loopback port, in a thread.

The server runs in this process so it shares the test database and cache; clients are the
SDK's own, over real Streamable HTTP, and downstreams are real processes.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from django.core.asgi import get_asgi_application
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.gateway_process import wait_until
from toolboxes.models import ApiKey, Server, Tenant, Toolbox
from workbench_site.gateway_app import build_application

FIXTURE_SERVER = str(Path(__file__).resolve().parent.parent / "servers" / "fixture_server.py")
STARTUP_TIMEOUT = 20.0


async def eventually(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """wait_until for async tests: polls without blocking the test's own event loop."""
    with anyio.move_on_after(timeout):
        while not condition():
            await anyio.sleep(0.02)
        return
    raise AssertionError(f"Timed out after {timeout}s waiting for {what}")


@dataclass
class LiveGateway:
    url: str
    app: Any

    @property
    def gateway(self) -> Any:
        return self.app.gateway

    @asynccontextmanager
    async def session(
        self, key: str | None, headers: dict[str, str] | None = None
    ) -> AsyncIterator[ClientSession]:
        """A 2025-11-25 client session (initialize handshake, Mcp-Session-Id)."""
        all_headers = {"Authorization": f"Bearer {key}"} if key else {}
        all_headers.update(headers or {})
        async with (
            httpx2.AsyncClient(headers=all_headers, timeout=60) as http,
            streamable_http_client(self.url, http_client=http) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session

    @asynccontextmanager
    async def client(self, key: str, header: str = "Authorization") -> AsyncIterator[Client]:
        """A 2026-07-28 client (mcp.Client's default: stateless, server/discover)."""
        value = f"Bearer {key}" if header == "Authorization" else key
        async with (
            httpx2.AsyncClient(headers={header: value}, timeout=60) as http,
            Client(streamable_http_client(self.url, http_client=http)) as client,
        ):
            yield client


@pytest.fixture
def live_gateway(transactional_db: None) -> Iterator[LiveGateway]:
    app = build_application(get_asgi_application())
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), STARTUP_TIMEOUT, "uvicorn to start")
    assert server.started, "uvicorn did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield LiveGateway(url=f"http://127.0.0.1:{port}/mcp", app=app)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        assert not thread.is_alive(), "uvicorn did not shut down within 30s"


@dataclass
class TenantSetup:
    tenant: Tenant
    key: str
    api_key: ApiKey

    def toolbox(self, name: str = "dev", description: str | None = None) -> Toolbox:
        return Toolbox.objects.create(
            tenant=self.tenant, name=name, description=description or f"{name} tools"
        )

    def fixture_server(
        self, toolbox: Toolbox, name: str, *args: str, position: int = 0, **fields: Any
    ) -> Server:
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


@pytest.fixture
def make_setup(transactional_db: None) -> Callable[..., TenantSetup]:
    def make(slug: str = "acme", **key_options: Any) -> TenantSetup:
        tenant = Tenant.objects.create(slug=slug, name=slug.title())
        api_key, key = ApiKey.issue(tenant, label="test", **key_options)
        return TenantSetup(tenant, key, api_key)

    return make


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
