"""A meta-tool's connection to one server of a toolbox: the pool's, by tenant, toolbox,
server and configuration fingerprint."""

from __future__ import annotations

from mcp_gateway.downstream.connection import Connection
from mcp_gateway.downstream.pool import Pool, PoolKey
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef, ToolboxConfig


def pool_key(caller: Caller, toolbox: ToolboxConfig, server: ServerConfig) -> PoolKey:
    return PoolKey(caller.tenant.tenant_id, toolbox.name, server.name, server.fingerprint)


async def connection(
    pool: Pool, caller: Caller, toolbox: ToolboxConfig, server: ServerConfig
) -> Connection:
    """The live connection (connecting once however many callers wait); ConnectFailed."""
    ref = ServerRef(caller.tenant.slug, toolbox.name, server.name)
    return await pool.get(
        pool_key(caller, toolbox, server), server, ref, caller.tenant.max_connections
    )
