"""A tenant's known tools (metatools.known_tools): only what a client may see is indexed
(filters, holds), a server is indexed again when its listing, snapshot or toolbox changes
and dropped when it is gone or unknown, and the stored listings are read again only when
they may have changed. The stored listings come through a function the assembly hands in
(the database door); here, a dict."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types

from kernel.pins import APPROVE_ALL, Pins, definition, digests
from mcp_gateway.downstream.pool import Pool
from mcp_gateway.metatools.known_tools import STORED_SECONDS, KnownTools, Listing
from mcp_gateway.snapshots.servers import ServerConfig, TenantConfig, ToolboxConfig


def tool(name: str, description: str) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema={"type": "object"})


READ = tool("read_file", "Read a file from the disk")
DELETE = tool("delete_file", "Delete a file from the disk")


def pool() -> Pool:
    return Pool(
        connect_timeout=5,
        idle_seconds=60,
        max_result_bytes=1_000_000,
        max_connections=10,
        tenant_max_connections=10,
    )


def tenant(*servers: ServerConfig, version: int = 1, description: str = "Files") -> TenantConfig:
    return TenantConfig(1, "acme", True, version, (ToolboxConfig("files", description, servers),))


def server(name: str = "disk", server_id: int = 1, **fields: Any) -> ServerConfig:
    return ServerConfig(name, "stdio", command="x", server_id=server_id, fingerprint="f", **fields)


def listing(*tools: types.Tool) -> Listing:
    return Listing(list(tools), digests(tools))


def found(known: KnownTools, query: str, keys: list[str] | None = None) -> list[str]:
    keys = keys if keys is not None else list(known.tenant(1).indexed)
    return [entry["name"] for entry in known.search(1, query, keys, 10)]


def test_filters_and_holds_are_never_indexed() -> None:
    known = KnownTools(pool())

    async def scenario() -> None:
        filtered = server(tool_filters=("read_file",))
        await known.update(tenant(filtered), {("files", "disk"): listing(READ, DELETE)})
        assert found(known, "file disk") == ["read_file"]
        held = server(pins=Pins(APPROVE_ALL, {"read_file": digests([READ])["read_file"]}))
        await known.update(tenant(held), {("files", "disk"): listing(READ, DELETE)})
        assert found(known, "file disk") == ["read_file"]  # delete_file waits for an admin

    anyio.run(scenario)


def test_a_change_of_listing_snapshot_or_toolbox_is_indexed_and_a_gone_server_dropped() -> None:
    known = KnownTools(pool())

    async def scenario() -> None:
        disk = server()
        first = listing(READ)
        await known.update(tenant(disk), {("files", "disk"): first})
        indexed = known.tenant(1).indexed["files/disk"]
        # The same lists again: nothing to do.
        await known.update(tenant(disk), {("files", "disk"): Listing(first.tools, first.digests)})
        assert known.tenant(1).indexed["files/disk"] is indexed
        # A connection's list replaced (a server's list_changed): indexed again.
        await known.update(tenant(disk), {("files", "disk"): listing(READ, DELETE)})
        assert sorted(found(known, "file disk")) == ["delete_file", "read_file"]
        # The toolbox's description changed: its words are found.
        await known.update(
            tenant(disk, description="Backups"), {("files", "disk"): listing(READ, DELETE)}
        )
        assert len(found(known, "backups")) == 2
        # A server unknown now (its listing failed) and a server gone.
        await known.update(tenant(disk), {}, unknown=[("files", "disk")])
        assert found(known, "file disk") == []
        await known.update(tenant(disk), {("files", "disk"): listing(READ)})
        await known.update(tenant(), {})
        assert found(known, "file disk", ["files/disk"]) == []
        assert known.tenant(1).indexed == {}

    anyio.run(scenario)


def test_stored_listings_are_read_again_when_stale_or_the_configuration_moved() -> None:
    now = [100.0]
    reads: list[list[int]] = []
    stored = {1: [definition(READ)]}

    async def read(ids: list[int]) -> dict[int, list[dict[str, Any]]]:
        reads.append(ids)
        return {i: stored[i] for i in ids if i in stored}

    known = KnownTools(pool(), read, clock=lambda: now[0])

    async def scenario() -> None:
        disk, other = server(), server("other", server_id=2)
        await known.refresh_stored(tenant(disk, other))
        assert reads == [[1, 2]]
        first = known.tenant(1).stored[1]
        assert [t.name for t in first.tools] == ["read_file"] and first.fits(disk)
        await known.refresh_stored(tenant(disk, other))
        assert len(reads) == 1  # fresh enough
        await known.refresh_stored(tenant(disk, other, version=2))
        assert len(reads) == 2  # the configuration moved
        assert known.tenant(1).stored[1] is first  # the same definitions: the same listing
        # A search's own listing is kept for its configuration only.
        known.learn(1, 2, Listing([DELETE], digests([DELETE]), (), "f"))
        stored[1] = [definition(READ), definition(DELETE)]
        now[0] += STORED_SECONDS
        await known.refresh_stored(tenant(disk, other, version=2))
        assert len(known.tenant(1).stored[1].tools) == 2
        kept = known.tenant(1).stored[2]
        assert kept.fits(other) and not kept.fits(replace(other, fingerprint="g"))

    anyio.run(scenario)
