"""A call that a server spoken to in 2025-11-25 might ask a question during, on a
connection of its own when the pool's is busy (issue 34).

Such a server asks with a request on its connection that names no call
(`downstream.server_questions`): on the pool's connection, shared by the tenant's
callers, the request is the one call's in flight, and with two in flight the gateway
cannot tell whose it is. Rather than guess, a call whose client could be asked (it
declared elicitation, sampling or roots), or one arriving while such a call is in flight,
gets a connection of its own for its length when the pool's has a call in flight: the
server's question is then this call's alone. The connection declares at its `initialize`
the call's client's capabilities (`envelope.canonical`), as the pool's connection for that
set does (`metatools.connect`), never more. Bounded: at most `LONE_CONNECTIONS` at once
per process, past which the call shares the pool's connection (and a question the gateway
cannot attribute is refused, saying so); a server each person signs in to, whose
connection carries the person's account, always shares the pool's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio

from mcp_gateway.downstream.connection import Connection
from mcp_gateway.downstream.envelope import canonical
from mcp_gateway.downstream.pool import ConnectFailed, Pool
from mcp_gateway.observe.recorder import Recorder
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef, ToolboxConfig

T = TypeVar("T")

logger = logging.getLogger("workbench.relay")

LONE_CONNECTIONS = 8  # a process's connections of a call's own, at once
BOUND = "lone_connections"  # the bound's name in the metric (`relay_bound_reached`)


class LoneCalls:
    """This process's connections made for one call each."""

    def __init__(self, pool: Pool, limit: int = LONE_CONNECTIONS) -> None:
        self.pool = pool
        self.limit = anyio.CapacityLimiter(limit)
        self.recorder = pool.recorder or Recorder()  # the gateway's: the bound's metric

    def needed(self, conn: Connection, server: ServerConfig, can_ask: bool) -> bool:
        """Whether a call (`can_ask`: its client could be asked) needs a connection of its
        own: the server asks by requests (2025-11-25), the pool's connection has a call in
        flight, and this call or one in flight could be asked; and there is room. Without
        room the operator is told (a question the server asks during the call, another in
        flight, is refused as one the gateway cannot attribute)."""
        if conn.modern or server.signs_in or conn.in_flight == 0:
            return False
        if not can_ask and not conn.askable_in_flight:
            return False
        if self.limit.available_tokens > 0:
            return True
        logger.warning(
            "[%s] a call shares the pool's connection: the connections of a call's own in this "
            "process are at their bound, %d (a question asked with another call in flight is "
            "refused)",
            conn.label,
            self.limit.total_tokens,
        )
        self.recorder.relay_bound_reached(conn.ref, BOUND)
        return False

    async def run(
        self,
        caller: Caller,
        toolbox: ToolboxConfig,
        server: ServerConfig,
        use: Callable[[Connection], Awaitable[T]],
        declared: Mapping[str, Any] | None = None,
    ) -> T:
        """`use` on a connection of its own, made for it and closed after it, which
        declares `declared` (the call's client's relayed capabilities)."""
        async with self.limit:
            ref = ServerRef(caller.tenant.slug, toolbox.name, server.name)
            conn = self.pool.unpooled(server, ref, canonical(declared))
            failure: Exception | None = None
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(conn.run)
                try:
                    await conn.wait_ready()
                    if conn.error is not None:
                        raise ConnectFailed(conn.error, conn.incident)
                    answer = await use(conn)
                except Exception as exc:  # raised as it came, not in the task group's group
                    failure = exc
                finally:
                    conn.stop()
            if failure is not None:
                raise failure
            return answer
