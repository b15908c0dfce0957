"""Records how each new downstream connection went, off the request path: ok or the
classified reason (its incident, and the admin's cause: `causes`), the connect time and the
tools offered (the server's status in the admin), and what it offers for pinning.

Once per connection the pool starts (never per call): a small task waits for the connect
to finish and hands the record to `record` (the gateway gives `database.records`'
`record_connection`: one trip to the ORM's thread), and again after each listing the
server's `list_changed` asked for (the new offer, pinned as the tenant's policy says). A
server failing for clients so shows failing in the admin. Nothing waits for the record,
and the gateway's decision does not either: the snapshot trusts a configuration's first
offer (trust-first) until the record says otherwise. A lost record is written by the next connect.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcp_gateway.downstream.causes import explain
from mcp_gateway.downstream.connection import Connection

logger = logging.getLogger("workbench.status")

# (server id, pinning policy, fingerprint, ok, milliseconds, reason, definitions, incident,
# the admin's cause)
RecordConnection = Callable[
    [int, str, str, bool, int, str, list[dict[str, Any]], str, str], Awaitable[None]
]


async def record_connection(conn: Connection, record: RecordConnection) -> None:
    """Run beside a new connection's owner task (the pool's task group)."""
    server = conn.server
    if not server.server_id:
        return
    started = time.monotonic()
    await conn.wait_ready()
    milliseconds = round((time.monotonic() - started) * 1000)
    ok = conn.error is None
    try:
        story = conn.failure
        cause = await explain(server, story) if story is not None else ""
        await record(
            server.server_id,
            server.pins.policy,
            server.fingerprint,
            ok,
            milliseconds,
            conn.error or "",
            conn.definitions if ok else [],
            conn.incident or "",
            cause,
        )
    except Exception:  # a record lost is written by the next connection
        logger.exception("[%s] could not record the connection", conn.label)
    if not ok:
        return
    while True:
        version = conn.tools_version
        await conn.listing_after(version)
        if conn.closed:
            return
        server = conn.server  # the pool hands the newest settings to each caller
        try:
            await record(
                server.server_id,
                server.pins.policy,
                server.fingerprint,
                True,
                milliseconds,
                "",
                conn.definitions,
                "",
                "",
            )
        except Exception:  # the next listing (or connection) records the offer
            logger.exception("[%s] could not record the new tool list", conn.label)
