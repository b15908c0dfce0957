"""The pool: one connection per tenant, toolbox, server and configuration, made once
however many callers wait; a new configuration retires the old connection; limits; and
each new connection recorded once, in one call. A caller's declared capabilities: the
connection for its set, counted and retired like any other, never recorded."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

from mcp_gateway.downstream.envelope import canonical, declared_set
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


# A caller's declared set (`envelope.canonical`): a 2025-11-25 server's connection for it.
ELICITATION = canonical({"elicitation": {"form": {}}})


def test_a_set_is_one_string_however_it_was_written():
    one = canonical({"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}})
    other = canonical({"elicitation": {"url": {}, "form": {}}, "roots": {"listChanged": True}})
    assert one == other == '{"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true}}'
    assert canonical({"elicitation": {}}) != canonical({"elicitation": {"form": {}}})
    assert canonical(None) == canonical({}) == ""
    assert canonical({"experimental": {"x": {}}, "tasks": {}}) == ""  # not relayed
    assert declared_set(one) == {
        "elicitation": {"form": {}, "url": {}},
        "roots": {"listChanged": True},
    }


async def test_a_sets_connection_is_its_own_and_counts_against_the_limits():
    one, two = fixture_server("one"), fixture_server("two")
    the_pool = pool(max_connections=5, tenant_max_connections=2)
    async with the_pool.running():
        base = await the_pool.get(key(one), one, ref(one))
        declaring = replace(key(one), declares=ELICITATION)
        own = await the_pool.get(declaring, one, ref(one))
        assert own is not base
        assert (base.declares, own.declares) == ({}, {"elicitation": {"form": {}}})
        assert await the_pool.get(declaring, one, ref(one)) is own  # the set's, kept
        assert the_pool.base_connections() == [base]
        assert the_pool.anyones(key(one)) is base  # what a listing reads
        with pytest.raises(ConnectFailed) as refused:
            await the_pool.get(key(two), two, ref(two))
        assert refused.value.reason == "this tenant's limit of 2 live server connections is reached"
    whole = pool(max_connections=2, tenant_max_connections=5)
    async with whole.running():
        await whole.get(key(one), one, ref(one))
        await whole.get(replace(key(one), declares=ELICITATION), one, ref(one))
        with pytest.raises(ConnectFailed) as refused:
            await whole.get(key(two, tenant_id=2), two, ref(two))
        assert refused.value.reason == (
            "the gateway's limit of 2 live server connections is reached; try again later"
        )


async def test_a_new_configuration_retires_each_sets_connection_and_only_the_base_records():
    records = []

    async def record(*row: object) -> None:
        records.append(row)

    old = fixture_server(server_id=7)
    changed = replace(old, args=(*old.args, "--prefix", "x"))
    new = replace(changed, fingerprint=fingerprint(changed))
    the_pool = pool(record)
    async with the_pool.running():
        base = await the_pool.get(key(old), old, ref(old))
        own = await the_pool.get(replace(key(old), declares=ELICITATION), old, ref(old))
        fresh = await the_pool.get(key(new), new, ref(new))
        with anyio.fail_after(10):
            await base.wait_closed()
            await own.wait_closed()
            while len(records) < 2:
                await anyio.sleep(0.01)
        assert the_pool.connections() == [fresh]
    assert [row[2] for row in records] == [old.fingerprint, new.fingerprint]  # bases only
