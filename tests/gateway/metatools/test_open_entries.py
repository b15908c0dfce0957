"""Open state's entries in the shared store (metatools.open_state): a process that read or
wrote an entry lately answers from what it saw, and asks the store again once the entry is
due for renewal, so that an entry that expired meanwhile is never taken as open."""

from __future__ import annotations

from typing import Any

import anyio

from mcp_gateway.metatools.open_state import OpenToolboxes


class CountingStore:
    """The shared store's interface over a dict, with a clock of its own for expiry."""

    def __init__(self, now: list[float]) -> None:
        self.now = now
        self.entries: dict[str, tuple[Any, float]] = {}
        self.reads = 0

    async def get(self, key: str, default: Any = None) -> Any:
        self.reads += 1
        value, expires = self.entries.get(key, (default, float("inf")))
        return value if self.now[0] < expires else default

    async def set(self, key: str, value: Any, timeout: float | None) -> None:
        self.entries[key] = (value, self.now[0] + (timeout or float("inf")))

    async def delete_many(self, keys: list[str]) -> None:
        for key in keys:
            self.entries.pop(key, None)

    async def close(self) -> None:
        pass


def test_an_entry_seen_lately_is_not_read_again_until_due_for_renewal() -> None:
    now = [1000.0]
    store = CountingStore(now)
    here = OpenToolboxes(100, store, clock=lambda: now[0])  # renewed every 10 s

    async def scenario() -> None:
        assert not await here.is_open("key:1", "dev")
        await here.mark_open("key:1", "dev")
        reads = store.reads
        now[0] += 9
        assert await here.is_open("key:1", "dev")
        assert store.reads == reads  # renewed 9 s ago: still there for 91 s
        now[0] += 2
        assert await here.is_open("key:1", "dev")  # due: read, then renewed
        assert store.reads == reads + 1
        assert store.entries["wb:open:key:1:dev"][0] == 1011.0

    anyio.run(scenario)


def test_an_entry_that_expired_is_closed_whatever_this_process_saw() -> None:
    now = [1000.0]
    store = CountingStore(now)
    here = OpenToolboxes(100, store, clock=lambda: now[0])

    async def scenario() -> None:
        await here.mark_open("key:1", "dev")
        now[0] += 100  # idle for the whole idle time
        assert not await here.is_open("key:1", "dev")
        assert not await here.is_open("key:1", "dev")

    anyio.run(scenario)


def test_a_renewal_by_another_process_is_seen() -> None:
    now = [1000.0]
    store = CountingStore(now)
    here = OpenToolboxes(100, store, clock=lambda: now[0])
    there = OpenToolboxes(100, store, clock=lambda: now[0])

    async def scenario() -> None:
        await here.mark_open("key:1", "dev")
        now[0] += 60
        assert await there.is_open("key:1", "dev")  # renews the entry at 1060
        now[0] += 60  # 120 s after this process's own renewal, 60 after the other's
        assert await here.is_open("key:1", "dev")
        assert store.entries["wb:open:key:1:dev"][0] == 1120.0  # renewed again, from here

    anyio.run(scenario)
