"""Bounded waits: the suite's only way to wait for something (no bare sleeps)."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable

import anyio

POLL_INTERVAL = 0.02


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """A bounded wait for a condition, failing with a clear message."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"Timed out after {timeout}s waiting for {what}")
        time.sleep(POLL_INTERVAL)


async def eventually(
    condition: Callable[[], bool | Awaitable[bool]], timeout: float, what: str
) -> None:
    """wait_until for async tests: polls without blocking the test's own event loop. The
    condition may be a coroutine function (one that reads the database through the ORM's
    async API, say)."""

    async def holds() -> bool:
        result = condition()
        return bool(await result) if inspect.isawaitable(result) else bool(result)

    with anyio.move_on_after(timeout):
        while not await holds():
            await anyio.sleep(POLL_INTERVAL)
        return
    raise AssertionError(f"Timed out after {timeout}s waiting for {what}")
