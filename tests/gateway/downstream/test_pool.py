"""The pool: one connection per tenant, toolbox, server and configuration, made once
however many callers wait; a new configuration retires the old connection; limits; and
each new connection recorded once, in one call."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

from mcp_gateway.downstream.pool import ConnectFailed, Pool, PoolKey
from mcp_gateway.snapshots.servers import ServerConfig, fingerprint
from tests.gateway.downstream.servers import fixture_server, ref

pytestmark = pytest.mark.anyio


def key(server: ServerConfig, tenant_id: int = 1) -> PoolKey:
    return PoolKey(tenant_id, "dev", server.name, server.fingerprint)


def pool(record=None, **limits: int) -> Pool:
    return Pool(
        connect_timeout=30,
        idle_seconds=600,
        max_result_bytes=1 << 20,
        max_connections=limits.get("max_connections", 10),
        tenant_max_connections=limits.get("tenant_max_connections", 10),
        record=record,
    )


async def test_callers_waiting_together_share_one_connection_and_one_record():
    records = []

    async def record(*row: object) -> None:
        records.append(row)

    server = fixture_server(server_id=7)
    the_pool = pool(record)
    found = []
    async with the_pool.running():
        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(lambda: _get(the_pool, server, found))
        assert len({id(conn) for conn in found}) == 1
        assert the_pool.connections() == [found[0]]
        with anyio.fail_after(10):
            while not records:
                await anyio.sleep(0.01)
    [(server_id, pinning, fp, ok, _ms, reason, definitions, incident, cause)] = records
    assert (server_id, pinning, fp, ok, reason, incident, cause) == (
        7,
        server.pins.policy,
        server.fingerprint,
        True,
        "",
        "",
        "",
    )
    assert definitions is found[0].definitions  # built once, by the connection


async def _get(the_pool: Pool, server: ServerConfig, found: list) -> None:
    found.append(await the_pool.get(key(server), server, ref(server)))


async def test_a_new_configuration_retires_the_old_connection():
    old = fixture_server()
    changed = replace(old, args=(*old.args, "--prefix", "x"))
    new = replace(changed, fingerprint=fingerprint(changed))
    the_pool = pool()
    async with the_pool.running():
        first = await the_pool.get(key(old), old, ref(old))
        second = await the_pool.get(key(new), new, ref(new))
        assert second is not first
        with anyio.fail_after(10):
            await first.wait_closed()  # idle: closed at once
        assert the_pool.connections() == [second]
        assert the_pool.ready(key(new), new) is second
        assert the_pool.ready(key(old), old) is None


async def test_the_process_and_tenant_limits_refuse_a_new_connection():
    one, two = fixture_server("one"), fixture_server("two")
    the_pool = pool(max_connections=5, tenant_max_connections=1)
    async with the_pool.running():
        await the_pool.get(key(one), one, ref(one))
        with pytest.raises(ConnectFailed, match="this tenant's limit of 1"):
            await the_pool.get(key(two), two, ref(two))
        await the_pool.get(key(two, tenant_id=2), two, ref(two))  # another tenant's own


async def test_a_failed_connect_is_said_and_forgotten():
    server = fixture_server("broken", "--exit-at-start")
    the_pool = pool()
    async with the_pool.running():
        with pytest.raises(ConnectFailed) as failed:
            await the_pool.get(key(server), server, ref(server))
        assert failed.value.reason.startswith("the server exited during start-up")
        assert failed.value.incident
        assert the_pool.connections() == []
