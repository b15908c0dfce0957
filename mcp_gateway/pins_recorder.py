"""Records what each new downstream connection offers, for pinning, off the request path.

Once per connection (not per open): the definitions go to the database in a thread
(`config.save_offer`), while the client's answer is already on its way. The gateway's
decision does not wait for it: the snapshot trusts a configuration's first offer
(trust-first) until the record says otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import weakref

from mcp_gateway import config
from mcp_gateway.config import ServerConfig
from mcp_gateway.connection import Connection
from mcp_gateway.pins import OFF, definition

logger = logging.getLogger("workbench.pins")


class OfferRecorder:
    def __init__(self) -> None:
        self._recorded: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._tasks: set[asyncio.Task[None]] = set()

    def observe(self, server: ServerConfig, conn: Connection) -> None:
        """Called with every connection handed out; records each one's offer once."""
        if server.pins.policy == OFF or not server.server_id or conn in self._recorded:
            return
        self._recorded.add(conn)
        definitions = [definition(tool) for tool in conn.tools]
        task = asyncio.get_running_loop().create_task(
            self._record(server.server_id, server.fingerprint, definitions, conn.label)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _record(
        server_id: int, fingerprint: str, definitions: list[dict], label: str
    ) -> None:
        try:
            await config.save_offer(server_id, fingerprint, definitions)
        except Exception:  # a record lost is retried by the next connection
            logger.exception("[%s] could not record the tools offered", label)

    async def drain(self) -> None:
        """Wait for the records in flight (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
