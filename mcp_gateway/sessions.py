"""Which toolboxes a client session has opened, in the shared store (Django's cache).

A session is its `Mcp-Session-Id` where the client has one, otherwise its API key. Every
entry is keyed by the API key's id as well, so a session id guessed or copied by another
key (or tenant) finds nothing. One entry per opened toolbox: two concurrent opens in one
session never overwrite each other. Entries expire after the idle time; using a toolbox
renews it.
"""

import hashlib

from mcp_gateway.store import SharedStore

KEY_SESSION = "-"  # the session of a client without a session id


class SessionStore:
    def __init__(self, idle_seconds: int, store: SharedStore) -> None:
        self.idle_seconds = idle_seconds
        self.store = store

    @staticmethod
    def _entry(key_id: int, session_id: str | None, toolbox: str) -> str:
        session = (
            hashlib.sha256(session_id.encode()).hexdigest()[:32] if session_id else KEY_SESSION
        )
        return f"wb:open:{key_id}:{session}:{toolbox}"

    async def mark_open(self, key_id: int, session_id: str | None, toolbox: str) -> None:
        await self.store.set(self._entry(key_id, session_id, toolbox), 1, self.idle_seconds)

    async def is_open(self, key_id: int, session_id: str | None, toolbox: str) -> bool:
        entry = self._entry(key_id, session_id, toolbox)
        # touch() renews the idle expiry and says whether the entry exists, in one call.
        return await self.store.touch(entry, self.idle_seconds)

    async def forget(self, key_id: int, session_id: str | None, toolboxes: list[str]) -> None:
        await self.store.delete_many([self._entry(key_id, session_id, name) for name in toolboxes])
