"""What this process knows of each tenant's tools, kept searchable: one `search.ToolIndex`
per tenant, fed by every listing the gateway has.

Where a server's tools come from, best first: a live connection of this process (its
`tools`, as it listed them at connect, or again when the server announced a change); else
the last listing stored in the database (`Server.last_check_tools` of a server whose last
connect or check succeeded, written by any process or replica of the tenant and by the
admin's checks: how they share what they listed), read at most every `STORED_SECONDS`
and only when a search needs a server no connection here has; else a listing made during
the search (`search_tools`), kept here until the stored one replaces it.

Each server is indexed under a key of its own (`server_key`: toolbox and server) with only
what a client may see of it: its tool filter applied, its held tools (`kernel.pins`) left
out, each tool as `open_toolbox` lists it. It is indexed again when what it was made from
changes: another tool list (a connection's list replaced: compared by identity, so a new
list is seen at once), another snapshot of the server (filters, approvals, configuration)
or of its toolbox's description. A server no longer in the tenant's snapshot leaves the
index at the next search. Per tenant, never shared: a search is filtered to the caller's
servers on top of that.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from pydantic import ValidationError

from kernel.pins import digest
from mcp_gateway.downstream.connection import Connection
from mcp_gateway.downstream.pool import Pool
from mcp_gateway.metatools.tools import tool_entry
from mcp_gateway.search.documents import Described
from mcp_gateway.search.index import ServerTools, ToolIndex
from mcp_gateway.snapshots.servers import ServerConfig, TenantConfig, ToolboxConfig

logger = logging.getLogger("workbench.search")

# server ids -> the stored definitions of those whose last connect or check succeeded
StoredListings = Callable[[list[int]], Awaitable[dict[int, list[dict[str, Any]]]]]

# How stale another process's (or the admin's) listing may be here, in seconds: the stored
# listings are read again after this, when a search needs a server not connected here.
STORED_SECONDS = 2.0
# Tools indexed in one commit above which the commit runs on a worker thread (a tenant's
# first build), so that the event loop keeps answering meanwhile.
THREAD_ABOVE_TOOLS = 500


def server_key(toolbox: str, server: str) -> str:
    """A server's key in its tenant's index (a name holds no '/': toolboxes.validators)."""
    return f"{toolbox}/{server}"


@dataclass(frozen=True, slots=True, eq=False)
class Listing:
    """A server's tools as one listing gave them, with each one's digest (pins)."""

    tools: Sequence[types.Tool]
    digests: Mapping[str, str]
    definitions: Sequence[Mapping[str, Any]] = ()  # a stored listing's, as stored
    # The configuration a search's own listing was made with ("": read from the database,
    # which keeps only listings made since the server's last edit).
    fingerprint: str = ""

    def fits(self, server: ServerConfig) -> bool:
        """Whether it lists the server as configured now."""
        return not self.fingerprint or self.fingerprint == server.fingerprint

    def same(self, other: Listing) -> bool:
        """Made from the very same lists (a connection's replaced list is another one)."""
        return (
            self.tools is other.tools
            and self.digests is other.digests
            and len(self.tools) == len(other.tools)
        )

    @classmethod
    def of(cls, conn: Connection) -> Listing:
        return cls(conn.tools, conn.digests)

    @classmethod
    def stored(cls, definitions: Sequence[Mapping[str, Any]]) -> Listing:
        """From the definitions `kernel.pins.definition` made (what the database keeps); one
        that is not a tool definition any more is skipped."""
        tools: list[types.Tool] = []
        digests: dict[str, str] = {}
        for item in definitions:
            try:
                tool = types.Tool.model_validate(item)
            except ValidationError:
                continue
            tools.append(tool)
            digests[tool.name] = digest(item)
        return cls(tools, digests, definitions)


@dataclass(slots=True)
class _Indexed:
    """What one server's documents were made from, and its tools' entries by name."""

    listing: Listing
    server: ServerConfig
    toolbox_description: str
    entries: dict[str, dict[str, Any]]

    def current(self, listing: Listing, server: ServerConfig, toolbox: ToolboxConfig) -> bool:
        return (
            self.listing.same(listing)
            and (self.server is server or self.server == server)
            and self.server.fingerprint == server.fingerprint
            and self.toolbox_description == toolbox.description
        )


@dataclass(slots=True)
class TenantTools:
    """One tenant's index and what it was made from."""

    index: ToolIndex = field(default_factory=ToolIndex)
    indexed: dict[str, _Indexed] = field(default_factory=dict)
    stored: dict[int, Listing] = field(default_factory=dict)  # by server id
    stored_at: float | None = None  # monotonic; None: never read
    stored_version: int | None = None  # the tenant's configuration version then
    # The server keys of the last snapshot seen (a snapshot is one object per version).
    keys_of: tuple[TenantConfig | None, frozenset[str]] = (None, frozenset())

    def keys(self, tenant: TenantConfig) -> frozenset[str]:
        """Every server's key in the tenant's snapshot, made once per snapshot."""
        if self.keys_of[0] is not tenant:
            keys = frozenset(
                server_key(tb.name, server.name) for tb in tenant.toolboxes for server in tb.servers
            )
            self.keys_of = (tenant, keys)
        return self.keys_of[1]

    lock: anyio.Lock = field(default_factory=anyio.Lock)


class KnownTools:
    """Every tenant's `TenantTools` in this process, and where their listings come from."""

    def __init__(
        self,
        pool: Pool,
        stored: StoredListings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pool = pool
        self._read_stored = stored  # None: no database (a meta-tool exercised alone)
        self._clock = clock
        self._tenants: dict[int, TenantTools] = {}

    def tenant(self, tenant_id: int) -> TenantTools:
        known = self._tenants.get(tenant_id)
        if known is None:
            known = self._tenants[tenant_id] = TenantTools()
        return known

    def live(self, tenant: TenantConfig) -> dict[tuple[str, str, str], Connection]:
        """This process's connected connections of the tenant, by toolbox, server and
        fingerprint (a server each person signs in to: anyone's; they list alike; the base
        connection of each, not one for a client's declared set)."""
        found: dict[tuple[str, str, str], Connection] = {}
        for conn in self.pool.base_connections():
            if conn.ref.tenant == tenant.slug and conn.is_ready and conn.alive:
                found.setdefault((conn.ref.toolbox, conn.ref.server, conn.server.fingerprint), conn)
        return found

    async def refresh_stored(self, tenant: TenantConfig) -> None:
        """The tenant's stored listings, read again when older than STORED_SECONDS or made
        before its configuration changed (in the ORM's thread, through the database door
        the assembly gave). The search's own listings stay, for their configuration."""
        known = self.tenant(tenant.tenant_id)
        now = self._clock()
        if self._read_stored is None:
            return
        fresh = known.stored_at is not None and now - known.stored_at < STORED_SECONDS
        if fresh and known.stored_version == tenant.version:
            return
        ids = [server.server_id for tb in tenant.toolboxes for server in tb.servers]
        try:
            fetched = await self._read_stored([i for i in ids if i])
        except Exception:  # the search answers with what it knows, and lists the rest
            logger.exception("tenant %s: could not read the stored tool listings", tenant.slug)
            return
        stored = {sid: listing for sid, listing in known.stored.items() if listing.fingerprint}
        for server_id, definitions in fetched.items():
            old = known.stored.get(server_id)
            same = old is not None and not old.fingerprint and list(old.definitions) == definitions
            stored[server_id] = old if same and old is not None else Listing.stored(definitions)
        known.stored, known.stored_at, known.stored_version = stored, now, tenant.version

    def learn(self, tenant_id: int, server_id: int, listing: Listing) -> None:
        """A listing made for a search, kept until a stored one replaces it."""
        if server_id:
            self.tenant(tenant_id).stored[server_id] = listing

    async def update(
        self,
        tenant: TenantConfig,
        listings: Mapping[tuple[str, str], Listing],
        unknown: Collection[tuple[str, str]] = (),
    ) -> None:
        """Index again each server (by toolbox and server name) whose listing, snapshot or
        toolbox changed; drop the servers the tenant no longer has, and those `unknown`
        (no listing fits them now: what was indexed of them may not be true any more)."""
        known = self.tenant(tenant.tenant_id)
        async with known.lock:
            batch: list[ServerTools] = []
            made: dict[str, _Indexed] = {}
            size = 0
            for toolbox in tenant.toolboxes:
                for server in toolbox.servers:
                    listing = listings.get((toolbox.name, server.name))
                    key = server_key(toolbox.name, server.name)
                    before = known.indexed.get(key)
                    if listing is None or (before and before.current(listing, server, toolbox)):
                        continue
                    entries = visible_entries(listing, server, toolbox)
                    indexed = _Indexed(listing, server, toolbox.description, entries)
                    made[key] = indexed
                    size += len(indexed.entries)
                    batch.append((key, *described(server, toolbox), list(entries.values())))
            present = known.keys(tenant) - {server_key(*place) for place in unknown}
            gone = [key for key in known.indexed if key not in present]
            for key in gone:
                known.index.remove_server(key)
                del known.indexed[key]
            if not batch:
                return
            if size > THREAD_ABOVE_TOOLS:
                await anyio.to_thread.run_sync(known.index.replace_servers, batch)
            else:
                known.index.replace_servers(batch)
            known.indexed.update(made)

    def search(
        self,
        tenant_id: int,
        query: str,
        servers: list[str],
        limit: int,
        keep: Callable[[dict[str, Any]], bool] | None = None,
    ) -> list[dict[str, Any]]:
        """The entries of the best `limit` tools of these servers (keys) for `query`;
        `keep`: only the entries it keeps (a caller's tool policies), the limit filled
        with the next best."""
        known = self.tenant(tenant_id)
        asked = limit
        while True:
            found: list[dict[str, Any]] = []
            hits = known.index.search(query, servers, asked)
            for hit in hits:
                indexed = known.indexed.get(hit.server_key)
                entry = indexed.entries.get(hit.tool) if indexed is not None else None
                if entry is not None and (keep is None or keep(entry)):
                    found.append(entry)
            if keep is None or len(found) >= limit or len(hits) < asked:
                return found[:limit]
            asked *= 4


def visible_entries(
    listing: Listing, server: ServerConfig, toolbox: ToolboxConfig
) -> dict[str, dict[str, Any]]:
    """What a client may see of the listing, each tool as `open_toolbox` lists it, by name:
    the filter applied, held tools left out (the admin's tool search asks it too)."""
    offered = [tool for tool in listing.tools if server.allows(tool.name)]
    waiting = server.pins.held_names(
        {tool.name: listing.digests.get(tool.name, "") for tool in offered}, server.fingerprint
    )
    return {
        tool.name: tool_entry(tool, server.name, toolbox.name)
        for tool in offered
        if tool.name not in waiting
    }


def described(server: ServerConfig, toolbox: ToolboxConfig) -> tuple[Described, Described]:
    """The toolbox and the server as a tool's search document counts them."""
    return Described(toolbox.name, toolbox.description), Described(server.name)
