"""Records how each new downstream connection went, as its server's status in the admin.

Once per connection the pool starts (never per call): a small task waits for the connect
to finish and writes ok or the classified reason, the connect time and the tools offered,
in the ORM's thread (`config.save_status`). A server failing for clients so shows failing
in the admin. Nothing waits for the record; a lost one is written by the next connect.
"""

from __future__ import annotations

import logging
import time

from mcp_gateway import config
from mcp_gateway.config import ServerConfig
from mcp_gateway.connection import Connection
from mcp_gateway.pins import definition

logger = logging.getLogger("workbench.status")


async def record_connect(server: ServerConfig, conn: Connection) -> None:
    """Run beside a new connection's owner task (the pool's task group)."""
    if not server.server_id:
        return
    started = time.monotonic()
    await conn.wait_ready()
    milliseconds = round((time.monotonic() - started) * 1000)
    ok = conn.error is None
    definitions = [definition(tool) for tool in conn.tools] if ok else []
    try:
        await config.save_status(server.server_id, ok, milliseconds, conn.error or "", definitions)
    except Exception:  # a status lost is written by the next connection
        logger.exception("[%s] could not record the connect status", conn.label)
