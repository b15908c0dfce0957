"""Concurrent requests that find a snapshot stale share one load of it: after a
configuration change, 100 sessions' next requests made 100 loads queued in the ORM's one
thread, and their answers waited up to 2 s (bench/concurrency.py's p99)."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from mcp_gateway.database import reads

pytestmark = pytest.mark.anyio


class Versions:
    """A shared store holding every tenant's configuration version at 1."""

    async def get(self, key: str, default: Any = None) -> Any:
        return 1


async def test_concurrent_stale_lookups_share_one_load(monkeypatch):
    loads: list[str] = []
    release = threading.Event()

    def load_key(prefix: str) -> None:
        loads.append(prefix)
        release.wait(10)  # held until every lookup has asked
        return None

    monkeypatch.setattr(reads, "load_key", load_key)
    snapshots = reads.Snapshots(Versions())  # type: ignore[arg-type]
    answers: list[Any] = []

    async def lookup() -> None:
        answers.append(await snapshots.key("wb_abcdefgh"))

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(lookup)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert loads == ["wb_abcdefgh"]
    assert answers == [None] * 20
    assert snapshots._loading == {}  # nothing left behind

    release.clear()
    release.set()
    await snapshots.key("wb_abcdefgh")  # a later lookup loads again (nothing was cached)
    assert loads == ["wb_abcdefgh"] * 2
