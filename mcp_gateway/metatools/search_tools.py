"""`search_tools`: the tools of every toolbox the credential may open (or of the one it
names), found by a query, each ready for `use_tool` (its toolbox is marked open).

The answer comes from the tenant's index (`known_tools`). A server whose tools the gateway
has never listed (no connection here, no successful listing stored) is listed during the
search, each such server at once and each bounded by its timeout; one that fails gives an
`_errors` line as `open_toolbox` does, and the others still answer. It is listed on the
pool's connection (which `use_tool` then reuses) while the tenant and the process are
within their live-connection limits; past them, on a connection of its own that is closed
once it has listed (at most `LISTINGS_AT_ONCE` such at a time in a process: the others
wait their turn), so that the limit is never why a tool is not found. A server each person
signs in to is listed only on the pool's connections (its sign-in is the caller's).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types

from mcp_gateway.downstream import failures
from mcp_gateway.downstream.connection import Connection
from mcp_gateway.downstream.connection_recorder import record_connection
from mcp_gateway.downstream.pool import ConnectFailed
from mcp_gateway.metatools import errors, policy
from mcp_gateway.metatools.connect import SignInRequired, connection, pool_key
from mcp_gateway.metatools.errors import GatewayError
from mcp_gateway.metatools.known_tools import KnownTools, Listing, server_key
from mcp_gateway.metatools.open_toolbox import visible_toolbox
from mcp_gateway.metatools.parts import MetaToolParts
from mcp_gateway.metatools.schemas import SearchToolsArgs, named_search, parse_search_args
from mcp_gateway.metatools.tools import failed
from mcp_gateway.observe.outcome import Outcome
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef, ToolboxConfig

# Listings on a connection of their own (past the live-connection limits) at once, per process.
LISTINGS_AT_ONCE = 4


@dataclass(frozen=True, slots=True)
class _Failure:
    reason: str
    incident: str = ""  # the log line's id, or a sign-in's connect link


class ToolSearcher:
    def __init__(self, parts: MetaToolParts, known: KnownTools) -> None:
        self.pool = parts.pool
        self.accounts = parts.accounts
        self.open_toolboxes = parts.open_toolboxes
        self.known = known
        self._turns = anyio.Semaphore(LISTINGS_AT_ONCE)

    async def __call__(self, caller: Caller, arguments: dict[str, Any] | None) -> Outcome:
        named = named_search(arguments)
        chosen: ToolboxConfig | None = None
        try:
            args = parse_search_args(arguments)
            if args.toolbox is not None:
                chosen = visible_toolbox(caller, args.toolbox, caller.tenant.toolbox(args.toolbox))
                scope = [chosen]
            else:
                scope = [tb for tb in caller.tenant.toolboxes if caller.key.allows(tb.name)]
            result, served = await self._search(caller, scope, args)
        except GatewayError as error:
            return failed(error, named, chosen)
        # Every tool returned is callable at once, as after open_toolbox.
        for toolbox in dict.fromkeys(entry["toolbox"] for entry in result["tools"]):
            await self.open_toolboxes.mark_open(caller.owner, toolbox)
        answer = types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
        )
        return Outcome(answer, named, chosen, redactors=tuple(c.redact for c in served))

    async def _search(
        self, caller: Caller, scope: list[ToolboxConfig], args: SearchToolsArgs
    ) -> tuple[dict[str, Any], list[Connection]]:
        tenant = caller.tenant
        live = self.known.live(tenant)
        servers = [(toolbox, server) for toolbox in scope for server in toolbox.servers]
        connected = {
            (tb.name, s.name): conn
            for tb, s in servers
            if (conn := live.get((tb.name, s.name, s.fingerprint))) is not None
        }
        if len(connected) < len(servers):
            await self.known.refresh_stored(tenant)
        stored = self.known.tenant(tenant.tenant_id).stored
        listings: dict[tuple[str, str], Listing] = {
            place: Listing.of(conn) for place, conn in connected.items()
        }
        unlisted: list[tuple[ToolboxConfig, ServerConfig]] = []
        for toolbox, server in servers:
            place = (toolbox.name, server.name)
            if place in listings:
                continue
            listing = stored.get(server.server_id)
            if listing is not None and listing.fits(server):
                listings[place] = listing
            else:
                unlisted.append((toolbox, server))
        outcomes = await self._list_now(caller, unlisted) if unlisted else {}
        served = list(connected.values())
        failures_: list[str] = []
        incidents: dict[str, str] = {}
        unknown: list[tuple[str, str]] = []
        for toolbox, server in unlisted:
            outcome = outcomes[(toolbox.name, server.name)]
            if isinstance(outcome, _Failure):
                unknown.append((toolbox.name, server.name))
                failures_.append(
                    errors.connect_failure_line(server.name, toolbox.name, outcome.reason)
                )
                if outcome.incident:
                    incidents[f"{toolbox.name}/{server.name}"] = outcome.incident
                continue
            listing, conn = outcome
            listings[(toolbox.name, server.name)] = listing
            served.append(conn)
        await self.known.update(tenant, listings, unknown)
        keys = [server_key(toolbox.name, server.name) for toolbox, server in servers]
        result: dict[str, Any] = {
            "query": args.query,
            "tools": self.known.search(
                tenant.tenant_id, args.query, keys, args.limit, policy.entry_filter(caller)
            ),
        }
        if failures_:
            result["_errors"] = failures_
        if incidents:
            result["_incidents"] = incidents
        return result, served

    async def _list_now(
        self, caller: Caller, unlisted: list[tuple[ToolboxConfig, ServerConfig]]
    ) -> dict[tuple[str, str], tuple[Listing, Connection] | _Failure]:
        """Each server listed at once, each bounded by its timeout."""
        outcomes: dict[tuple[str, str], tuple[Listing, Connection] | _Failure] = {}

        async def list_one(toolbox: ToolboxConfig, server: ServerConfig) -> None:
            place = (toolbox.name, server.name)
            try:
                with anyio.fail_after(server.timeout):
                    outcomes[place] = await self._listing(caller, toolbox, server)
            except TimeoutError:
                outcomes[place] = _Failure(failures.LIST_TIMEOUT)
            except SignInRequired as exc:
                outcomes[place] = _Failure(errors.sign_in_first(server.name, exc.url), exc.url)
            except ConnectFailed as exc:
                outcomes[place] = _Failure(exc.reason, exc.incident or "")

        async with anyio.create_task_group() as task_group:
            for toolbox, server in unlisted:
                task_group.start_soon(list_one, toolbox, server)
        return outcomes

    async def _listing(
        self, caller: Caller, toolbox: ToolboxConfig, server: ServerConfig
    ) -> tuple[Listing, Connection]:
        """The pool's connection while there is room for one (or the server signs in);
        else a connection of its own, closed once it has listed."""
        if server.signs_in or self._room(caller, toolbox, server):
            try:
                conn = await connection(self.pool, caller, toolbox, server, self.accounts)
                return Listing.of(conn), conn
            except ConnectFailed:
                if server.signs_in or self._room(caller, toolbox, server):
                    raise  # not the limit's doing: the server's own failure
        return await self._list_once(caller, toolbox, server)

    def _room(self, caller: Caller, toolbox: ToolboxConfig, server: ServerConfig) -> bool:
        """Whether the pool would take this server's connection (its caps: `limit_reached`)."""
        key = pool_key(caller, toolbox, server)
        return self.pool.limit_reached(key, caller.tenant.max_connections) is None

    async def _list_once(
        self, caller: Caller, toolbox: ToolboxConfig, server: ServerConfig
    ) -> tuple[Listing, Connection]:
        """Connect, list, close: outside the pool, recorded as a connect is (so that the
        tenant's other processes know the listing too)."""
        async with self._turns:
            conn = self.pool.unpooled(
                server, ServerRef(caller.tenant.slug, toolbox.name, server.name)
            )
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(conn.run)
                await conn.wait_ready()
                conn.stop()
        if self.pool.record is not None:
            await record_connection(conn, self.pool.record)
        if conn.error is not None:
            raise ConnectFailed(conn.error, conn.incident)
        listing = Listing(conn.tools, conn.digests, conn.definitions, server.fingerprint)
        self.known.learn(caller.tenant.tenant_id, server.server_id, listing)
        return listing, conn
