"""Which toolboxes each caller has opened, in the shared store.

Open state belongs to the caller's credential (an API key, or an OAuth grant), not to one
MCP session: clients that open a new session per call (the MCP Inspector CLI, LangChain's
adapters) and stateless 2026-07-28 clients see what their key opened; another key of the
same tenant does not. One entry per opened toolbox, so a caller creates at most as many
entries as it has toolboxes (a random `Mcp-Session-Id` creates nothing), and two
concurrent opens never overwrite each other. Entries expire after the idle time; using a
toolbox renews its entry, at most once per `renew_seconds`.

Nothing removes an entry before it expires, so an entry this process read or wrote lately
is still there: within `renew_seconds` of its renewal a call asks the store nothing (one
read of the shared store per entry and process every `renew_seconds`, instead of one per
call).

Owners are row ids (`key:7`): entries carry the database's installation in `prefix`, which
the gateway sets at start, so a new database's key 7 finds nothing the old one opened.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcp_gateway.store.shared import PREFIX, SharedStore

# Renew an entry's expiry when this share of the idle time has passed since the last renewal.
RENEW_FRACTION = 0.1
# Entries remembered in this process; past this many, the oldest renewals are forgotten.
REMEMBERED_ENTRIES = 10_000


class OpenToolboxes:
    def __init__(
        self,
        idle_seconds: float,
        store: SharedStore,
        clock: Callable[[], float] = time.time,
        prefix: str = PREFIX,
    ) -> None:
        self.idle_seconds = idle_seconds
        self.store = store
        self.prefix = prefix  # the gateway's: store.installation_prefix, set at start
        self._renewed: dict[str, float] = {}  # entry: its renewal, as last seen here
        self._clock = clock

    @property
    def renew_seconds(self) -> float:
        """Always well within the idle time: what this process saw renewed within it is
        still in the store."""
        return self.idle_seconds * RENEW_FRACTION

    def _entry(self, owner: str, toolbox: str) -> str:
        return f"{self.prefix}:open:{owner}:{toolbox}"

    async def mark_open(self, owner: str, toolbox: str) -> None:
        """Opened (again): renewed when it was not lately."""
        await self._renew(self._entry(owner, toolbox), create=True)

    async def is_open(self, owner: str, toolbox: str) -> bool:
        """Whether owner has this toolbox open; renews the entry's idle expiry."""
        return await self._renew(self._entry(owner, toolbox), create=False)

    async def _renew(self, entry: str, *, create: bool) -> bool:
        """Whether the entry exists (or was created); renewed when `renew_seconds` passed."""
        now = self._clock()
        renewed_at = self._renewed.get(entry)
        if renewed_at is not None and now - renewed_at < self.renew_seconds:
            return True  # renewed lately: it expires idle_seconds after that, not before
        renewed_at = await self.store.get(entry)  # maybe renewed by another process since
        if renewed_at is None and not create:
            self._renewed.pop(entry, None)
            return False
        if renewed_at is None or now - renewed_at >= self.renew_seconds:
            await self.store.set(entry, now, self.idle_seconds)
            renewed_at = now
        self._remember(entry, renewed_at)
        return True

    def _remember(self, entry: str, renewed_at: float) -> None:
        self._renewed.pop(entry, None)  # re-inserted last: the dict is oldest-first
        self._renewed[entry] = renewed_at
        while len(self._renewed) > REMEMBERED_ENTRIES:
            del self._renewed[next(iter(self._renewed))]
