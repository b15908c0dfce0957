"""Which toolboxes each caller has opened, in the shared store.

Open state belongs to the caller's credential (an API key, or an OAuth grant), not to one
MCP session: clients that open a new session per call (the MCP Inspector CLI, LangChain's
adapters) and stateless 2026-07-28 clients see what their key opened; another key of the
same tenant does not. One entry per opened toolbox, so a caller creates at most as many
entries as it has toolboxes (a random `Mcp-Session-Id` creates nothing), and two
concurrent opens never overwrite each other. Entries expire after the idle time; using a
toolbox renews its entry, at most once per `renew_seconds` so most calls only read.
"""

from __future__ import annotations

import time

from mcp_gateway.store import SharedStore

# Renew an entry's expiry when this share of the idle time has passed since the last renewal.
RENEW_FRACTION = 0.1


class OpenToolboxes:
    def __init__(self, idle_seconds: float, store: SharedStore) -> None:
        self.idle_seconds = idle_seconds
        self.renew_seconds = idle_seconds * RENEW_FRACTION
        self.store = store

    @staticmethod
    def _entry(owner: str, toolbox: str) -> str:
        return f"wb:open:{owner}:{toolbox}"

    async def mark_open(self, owner: str, toolbox: str) -> None:
        """Opened (again): a read when the entry was renewed lately, else a write."""
        entry = self._entry(owner, toolbox)
        now = time.time()
        renewed_at = await self.store.get(entry)
        if renewed_at is None or now - renewed_at >= self.renew_seconds:
            await self.store.set(entry, now, self.idle_seconds)

    async def is_open(self, owner: str, toolbox: str) -> bool:
        """Whether owner has this toolbox open; renews the entry's idle expiry."""
        entry = self._entry(owner, toolbox)
        renewed_at = await self.store.get(entry)
        if renewed_at is None:
            return False
        now = time.time()
        if now - renewed_at >= self.renew_seconds:
            await self.store.set(entry, now, self.idle_seconds)
        return True
