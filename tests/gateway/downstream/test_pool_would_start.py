"""`Pool.would_start`: what the toolbox endpoint's implicit open counts against
open_toolbox's rate limit: a connection to be made, not one live or starting, nor one its
failures' cooldown holds back."""

from __future__ import annotations

import pytest

from mcp_gateway.downstream.pool import Pool, PoolKey
from mcp_gateway.downstream.respawn import RespawnPolicy, ServerHealth
from tests.gateway.downstream.servers import fixture_server, ref

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pool() -> Pool:
    return Pool(
        connect_timeout=30,
        idle_seconds=600,
        max_result_bytes=1 << 20,
        max_connections=10,
        tenant_max_connections=10,
    )


async def test_a_live_connection_would_not_start_again():
    server = fixture_server()
    key = PoolKey(1, "dev", server.name, server.fingerprint)
    the_pool = pool()
    async with the_pool.running():
        assert the_pool.would_start(key, server)
        await the_pool.get(key, server, ref(server))
        assert not the_pool.would_start(key, server)


def test_a_server_in_its_cooldown_would_not_start():
    server = fixture_server()
    key = PoolKey(1, "dev", server.name, server.fingerprint)
    the_pool = pool()
    health = ServerHealth(RespawnPolicy())
    for _ in range(RespawnPolicy().failures_before_cooldown):
        health.failed("the command was not found")
    the_pool._health[key] = health
    assert not the_pool.would_start(key, server)
