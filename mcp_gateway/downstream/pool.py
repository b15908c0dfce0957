"""This process's downstream connections, shared by every session and key of a tenant.

Keyed by tenant, toolbox, server and configuration fingerprint: 100 sessions using one
server share one process; an admin edit changes the fingerprint, so new calls get a new
connection and the old one is closed once no call is in flight on it.

A server spoken to in 2025-11-25 learns the client's capabilities once, at `initialize`:
the base connection of a server (`declares` empty) declares none, and a caller that
declared some is served by the connection for its set (`declares`: `envelope.canonical`),
one more connection of the server's, counted, retired and closed when idle like any other.
Listing, status records and warm-up use the base connection; a `list_changed` heard on
any of a server's connections asks the others to list again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial

import anyio
import httpx2
from anyio.abc import TaskGroup

from mcp_gateway.downstream.connection import Connection
from mcp_gateway.downstream.connection_recorder import RecordConnection, record_connection
from mcp_gateway.downstream.envelope import declared_set
from mcp_gateway.downstream.respawn import RespawnPolicy, ServerHealth
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.observe.recorder import Recorder
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef

logger = logging.getLogger("workbench.pool")

SHUTDOWN_GRACE_SECONDS = 10.0
REAP_INTERVAL_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class PoolKey:
    tenant_id: int
    toolbox: str
    server: str
    fingerprint: str
    # A server each person signs in to: whose connection (never reused for another).
    person: int | None = None
    # The client capabilities its 2025-11-25 initialize declares (`envelope.canonical`):
    # "" for the server's base connection, which declares none.
    declares: str = ""

    @property
    def place(self) -> tuple[int, str, str, int | None]:
        """Which server this is (and for whom), whatever configuration it was connected with."""
        return (self.tenant_id, self.toolbox, self.server, self.person)

    @property
    def base(self) -> PoolKey:
        """The server's base connection's key (which declares no capability)."""
        return replace(self, declares="") if self.declares else self

    def replaces(self, other: PoolKey) -> bool:
        """Whether a connection for this key takes the place of one for `other`: the same
        server, for the same set, or in an older configuration (whatever its set)."""
        return other.place == self.place and (
            other.fingerprint != self.fingerprint or other.declares == self.declares
        )


class ConnectFailed(Exception):
    def __init__(self, reason: str, incident: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.incident = incident  # the log line with the full reason (failures.report)


class Pool:
    def __init__(
        self,
        *,
        connect_timeout: float,
        idle_seconds: float,
        max_result_bytes: int,
        max_connections: int,
        tenant_max_connections: int,
        respawn: RespawnPolicy | None = None,
        record: RecordConnection | None = None,
        record_set_offer: RecordConnection | None = None,
        sandbox: SandboxPolicy | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self.tenant_max_connections = tenant_max_connections
        self.max_result_bytes = max_result_bytes
        self.idle_seconds = idle_seconds
        self.respawn = respawn or RespawnPolicy()
        self.record = record  # how each new connection went, for the admin (None: unrecorded)
        # What a connection for a declared set offers, for pinning (None: unrecorded).
        self.record_set_offer = record_set_offer
        self.sandbox = sandbox  # the gateway's (None: the settings' at each connect)
        self.recorder = recorder  # the gateway's: its connections' metrics
        self._health: dict[PoolKey, ServerHealth] = {}
        self._connections: dict[PoolKey, Connection] = {}
        self._retiring: set[Connection] = set()
        self._task_group: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Pool]:
        """Owns every connection's task; leaving it closes them all within a bound."""
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            task_group.start_soon(self._reap_forever)
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    await self._close_all()
                self._task_group = None
                task_group.cancel_scope.cancel()

    def connections(self) -> list[Connection]:
        return [conn for conn in self._connections.values() if not conn.closed]

    def base_connections(self) -> list[Connection]:
        """The servers' base connections (what a listing reads), not those for a set."""
        return [
            conn for key, conn in self._connections.items() if not key.declares and not conn.closed
        ]

    def running_keys(self) -> list[PoolKey]:
        """The keys of the connections that are up (what a warm-up would start again)."""
        return [key for key, conn in self._connections.items() if conn.is_ready and conn.alive]

    async def get(
        self,
        key: PoolKey,
        server: ServerConfig,
        ref: ServerRef,
        tenant_limit: int | None = None,
        auth: httpx2.Auth | None = None,
    ) -> Connection:
        """The live connection for key, connecting once however many callers wait for it."""
        conn = self._connections.get(key)
        if conn is None or (conn.is_ready and not conn.alive):
            health = self._health.setdefault(key, ServerHealth(self.respawn))
            if health.in_cooldown():
                raise ConnectFailed(
                    f"the server failed {health.failures} times in a row "
                    f"(last: {health.last_reason}); next attempt in "
                    f"{health.wait_seconds():.0f}s"
                )
            await anyio.sleep(health.wait_seconds())  # backoff, bounded by the policy
            conn = self._connections.get(key)  # another caller may have started it meanwhile
            if conn is None or (conn.is_ready and not conn.alive):
                self._check_limits(key, tenant_limit)
                conn = self._start(key, server, ref, health, auth)
        await conn.wait_ready()
        if not conn.alive:
            if self._connections.get(key) is conn:
                del self._connections[key]
            raise ConnectFailed(conn.error or "the server connection closed", conn.incident)
        conn.last_used = time.monotonic()  # an open counts as use: the reaper leaves it be
        conn.server = server  # the same connection, but settings such as idle time may be new
        return conn

    def ready(self, key: PoolKey, server: ServerConfig) -> Connection | None:
        """The live, connected connection for key, without waiting; None if there is none
        (then `get` connects). Counts as use, as `get` does."""
        conn = self._connections.get(key)
        if conn is None or not conn.is_ready or not conn.alive:
            return None
        conn.last_used = time.monotonic()
        conn.server = server
        return conn

    def live(self, key: PoolKey) -> Connection | None:
        """The live, connected connection for key, if any: not counted as use (a watcher's
        look, which must not keep a server from its idle end)."""
        conn = self._connections.get(key)
        return conn if conn is not None and conn.is_ready and conn.alive else None

    def anyones(self, key: PoolKey) -> Connection | None:
        """A live connection of the same server and configuration, whoever's: what a server
        each person signs in to offers, for listing to a person not signed in yet."""
        for other, conn in self._connections.items():
            same = other.place[:3] == key.place[:3] and other.fingerprint == key.fingerprint
            if same and not other.declares and conn.is_ready and conn.alive:
                return conn
        return None

    def _check_limits(self, key: PoolKey, tenant_limit: int | None) -> None:
        reason = self.limit_reached(key, tenant_limit)
        if reason is not None:
            raise ConnectFailed(reason)

    def limit_reached(self, key: PoolKey, tenant_limit: int | None = None) -> str | None:
        """Which cap on live connections, for the process or per tenant, a new connection
        for key would pass (None: neither). A connection that a new one of the same server
        replaces does not count; the server's connections for other sets do."""
        limit = self.tenant_max_connections if tenant_limit is None else tenant_limit
        others = [
            other
            for other in self._connections
            if not key.replaces(other) and not self._connections[other].closed
        ]
        if len(others) >= self.max_connections:
            return (
                f"the gateway's limit of {self.max_connections} live server connections is "
                "reached; try again later"
            )
        if sum(other.tenant_id == key.tenant_id for other in others) >= limit:
            return f"this tenant's limit of {limit} live server connections is reached"
        return None

    def _start(
        self,
        key: PoolKey,
        server: ServerConfig,
        ref: ServerRef,
        health: ServerHealth,
        auth: httpx2.Auth | None = None,
    ) -> Connection:
        if self._task_group is None:
            raise RuntimeError("The downstream pool is not running")
        conn = Connection(
            server,
            ref,
            self.connect_timeout,
            health,
            max_result_bytes=self.max_result_bytes,
            auth=auth,
            sandbox=self.sandbox,
            recorder=self.recorder,
            declares=declared_set(key.declares),
        )
        conn.list_siblings = partial(self._list_siblings, key)
        self._connections[key] = conn
        self._task_group.start_soon(conn.run)
        if self.record is not None and not key.declares:  # the admin's status: the base's
            self._task_group.start_soon(record_connection, conn, self.record)
        elif self.record_set_offer is not None and key.declares:  # its offer, for pinning
            self._task_group.start_soon(record_connection, conn, self.record_set_offer)
        # Older configurations of the same server (each set's too) are closed once their
        # calls are done.
        for other_key, other in list(self._connections.items()):
            if key.replaces(other_key) and other_key != key:
                del self._connections[other_key]
                self._health.pop(other_key, None)
                self._retiring.add(other)
        self._reap_retiring()
        return conn

    def _list_siblings(self, key: PoolKey) -> list[anyio.Event]:
        """The same server's other live connections in key's configuration (its base, its
        sets'), each asked to list its tools again: a `list_changed` heard on one of them
        (a server's other process, or session, may announce nothing)."""
        return [
            conn.list_again()
            for other, conn in self._connections.items()
            if other != key
            and other.place == key.place
            and other.fingerprint == key.fingerprint
            and conn.alive
        ]

    def _reap_retiring(self) -> None:
        for conn in list(self._retiring):
            if conn.in_flight == 0 or conn.closed:
                conn.stop()
                self._retiring.discard(conn)

    def reap(self, now: float | None = None) -> None:
        """Close retired connections once idle, and live ones unused for their idle time."""
        now = time.monotonic() if now is None else now
        self._reap_retiring()
        for key, conn in list(self._connections.items()):
            if conn.closed:
                del self._connections[key]
            elif conn.alive and conn.in_flight == 0 and now - conn.last_used > self._idle(conn):
                logger.info("[%s] closing idle connection", conn.label)
                del self._connections[key]
                conn.stop()

    def _idle(self, conn: Connection) -> float:
        """How long this connection may sit unused: its server's own limit, else the pool's."""
        return conn.server.idle_timeout or self.idle_seconds

    async def _reap_forever(self) -> None:
        while True:
            await anyio.sleep(REAP_INTERVAL_SECONDS)
            self.reap()

    async def _close_all(self) -> None:
        conns = [*self._connections.values(), *self._retiring]
        self._connections.clear()
        self._retiring.clear()
        for conn in conns:
            conn.stop()
        with anyio.move_on_after(SHUTDOWN_GRACE_SECONDS):
            for conn in conns:
                await conn.wait_closed()

    def unpooled(self, server: ServerConfig, ref: ServerRef, declares: str = "") -> Connection:
        """A connection with this pool's settings that the pool does not keep: its owner
        runs it, stops it, and counts it against no cap of the pool's (a listing past the
        tenant's limit, a call that must be alone on its connection, which declares its
        client's set: `declares`, `envelope.canonical`'s)."""
        return Connection(
            server,
            ref,
            self.connect_timeout,
            max_result_bytes=self.max_result_bytes,
            sandbox=self.sandbox,
            recorder=self.recorder,
            declares=declared_set(declares),
        )

    def would_start(self, key: PoolKey, server: ServerConfig) -> bool:
        """Whether `get` would start a connection for key now: none is live or starting,
        and its failures' cooldown would not refuse it (what an implicit open counts)."""
        if self.ready(key, server) is not None:
            return False
        conn = self._connections.get(key)
        if conn is not None and not conn.is_ready:
            return False  # starting already, for another caller
        health = self._health.get(key)
        return health is None or not health.in_cooldown()
