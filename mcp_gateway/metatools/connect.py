"""A meta-tool's connection to one server of a toolbox: the pool's, by tenant, toolbox,
server and configuration fingerprint, and for a server each person signs in to, by person.

A call whose client declared capabilities a server may ask through (`envelope.relayed`),
to a server spoken to in 2025-11-25, which learns them once at `initialize`, goes to the
pool's connection for that set: the base connection declares none, so that the server
sees the calling client's declared capabilities, never more. A stdio server is connected
first (its base: whether it speaks 2026-07-28, which is told each call's set in the
request, is known only then); a remote one is spoken to in 2025-11-25 always.

A signed-in server (`downstream.connected`) is connected only when the account it needs is:
else the caller is told to sign in (`SignInRequired`, with a one-time link) before any
connection is tried, and a server that refuses the account's token says the same."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mcp_gateway.downstream.connected.accounts import (
    SHARED_NEEDED,
    BearerAuth,
    ConnectedAccounts,
    SignInNeeded,
    SignInUnavailable,
)
from mcp_gateway.downstream.connected.machine import ClientCredentialsAuth
from mcp_gateway.downstream.connection import Connection
from mcp_gateway.downstream.envelope import canonical, offers_modern
from mcp_gateway.downstream.pool import ConnectFailed, Pool, PoolKey
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef, ToolboxConfig


class SignInRequired(Exception):
    """The caller must sign in to the server first, at `url`."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


def pool_key(caller: Caller, toolbox: ToolboxConfig, server: ServerConfig) -> PoolKey:
    person = caller.person_id if server.per_person else None
    return PoolKey(caller.tenant.tenant_id, toolbox.name, server.name, server.fingerprint, person)


async def connection(
    pool: Pool,
    caller: Caller,
    toolbox: ToolboxConfig,
    server: ServerConfig,
    accounts: ConnectedAccounts | None = None,
    declared: Mapping[str, Any] | None = None,
) -> Connection:
    """The live connection (connecting once however many callers wait); ConnectFailed,
    SignInRequired. `declared`: the calling client's (relayed) capabilities, so that a
    listing shows what the server offers such a client, and a call reaches the server as
    that client; None (a client that declared none): the server's base connection."""
    key = served_key(pool, caller, toolbox, server, declared)
    conn = await _pooled(pool, caller, toolbox, server, accounts, key)
    if not declared or key.declares or conn.modern:  # 2026-07-28: each request tells the set
        return conn
    # A stdio server's base, connected just now to learn its protocol: 2025-11-25, so the
    # set's connection (unless the set is empty: the base's own key again).
    again = served_key(pool, caller, toolbox, server, declared)
    return conn if again == key else await _pooled(pool, caller, toolbox, server, accounts, again)


def served_key(
    pool: Pool,
    caller: Caller,
    toolbox: ToolboxConfig,
    server: ServerConfig,
    declared: Mapping[str, Any] | None = None,
) -> PoolKey:
    """The key of the connection `connection` would give now, the one home of its rule:
    the base for a client that declared none and for a server spoken to in 2026-07-28,
    else the connection for the client's set; a stdio server's base while it is not known
    to speak 2026-07-28 or not (`connection` connects it first, then asks again)."""
    key = pool_key(caller, toolbox, server)
    declares = canonical(declared) if declared else ""
    if not declares:
        return key
    if not offers_modern(server):
        return _for(key, declares)
    base = pool.live(key)
    return key if base is None or base.modern else _for(key, declares)


def ready(
    pool: Pool,
    caller: Caller,
    toolbox: ToolboxConfig,
    server: ServerConfig,
    declared: Mapping[str, Any] | None = None,
) -> Connection | None:
    """The connection `connection` would give now, without waiting nor connecting; None
    if it would have to connect."""
    return pool.ready(served_key(pool, caller, toolbox, server, declared), server)


def _for(key: PoolKey, declares: str) -> PoolKey:
    """The key of the pool's connection of key's server that declares `declares`."""
    return replace(key, declares=declares)


async def _pooled(
    pool: Pool,
    caller: Caller,
    toolbox: ToolboxConfig,
    server: ServerConfig,
    accounts: ConnectedAccounts | None,
    key: PoolKey,
) -> Connection:
    """The pool's connection for key, with the account a signed-in server needs."""
    ref = ServerRef(caller.tenant.slug, toolbox.name, server.name)
    if server.auth == "client_credentials":  # Workbench itself: no person, no account row
        machine = ClientCredentialsAuth(server)
        return await pool.get(key, server, ref, caller.tenant.max_connections, auth=machine)
    if not server.signs_in or accounts is None:
        return await pool.get(key, server, ref, caller.tenant.max_connections)
    try:
        person = accounts.person_of(server, caller.person_id)
        await accounts.ensure(server, person, caller.tenant.version)
    except SignInUnavailable as exc:
        raise ConnectFailed(exc.phrase) from None
    except SignInNeeded:
        raise await sign_in_required(accounts, caller, server) from None
    auth = BearerAuth(accounts, server, person)
    try:
        conn = await pool.get(key, server, ref, caller.tenant.max_connections, auth=auth)
    except ConnectFailed:
        if auth.rejected:  # this connect's own auth was refused by the server
            raise await sign_in_required(accounts, caller, server) from None
        raise
    return conn


async def sign_in_required(
    accounts: ConnectedAccounts, caller: Caller, server: ServerConfig
) -> SignInRequired | ConnectFailed:
    """What to raise when the caller must sign in: the link for a person, else say so."""
    if caller.person_id is None or not server.per_person:
        return ConnectFailed(SHARED_NEEDED)
    return SignInRequired(await accounts.connect_url(server, caller.person_id, caller.base_url))


def refused(conn: Connection) -> bool:
    """Whether the server refused the account's token on this connection (reconnect)."""
    return isinstance(conn.auth, BearerAuth) and conn.auth.rejected
