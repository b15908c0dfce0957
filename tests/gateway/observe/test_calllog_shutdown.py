"""The call log's writer at shutdown: the entries still queued or gathering are written,
after the batch the thread is busy with, and nothing is written once `running()` has
returned (the gateway's database connection in that thread is let go last). A write that
went on after shutdown once raced the test database's flush on PostgreSQL."""

from __future__ import annotations

import threading

import anyio
import pytest

from mcp_gateway.observe.calllog import CallEntry, CallLog

pytestmark = pytest.mark.anyio


def entry(n: int) -> CallEntry:
    return CallEntry(
        at=float(n),
        tenant_id=1,
        key_id=1,
        key_prefix="pre",
        client_name="",
        client_version="",
        session_id="",
        meta_tool="use_tool",
        duration_ms=1.0,
        outcome="ok",
        error_code="",
        incident="",
        arguments={},
        result=None,
    )


class Writer:
    """A `save` and `release` that say what ran, in which thread; `save` can be held."""

    def __init__(self) -> None:
        self.events: list[tuple[str, list[float], str]] = []
        self.saving = threading.Event()
        self.proceed = threading.Event()
        self.proceed.set()

    def save(self, batch: list[CallEntry]) -> None:
        self.saving.set()
        assert self.proceed.wait(10), "the test never let the write finish"
        self.events.append(("save", [e.at for e in batch], threading.current_thread().name))

    def release(self) -> None:
        self.events.append(("release", [], threading.current_thread().name))


async def test_entries_still_gathering_at_shutdown_are_written_then_the_thread_let_go():
    writer = Writer()
    log = CallLog(writer.save, 10, 10, release=writer.release)
    async with log.running():
        log.put(entry(1))
        log.put(entry(2))
        await anyio.sleep(0)  # the writer may take them and gather a batch (FLUSH_SECONDS)
    assert [(kind, ats) for kind, ats, _ in writer.events] == [
        ("save", [1.0, 2.0]),
        ("release", []),
    ]
    assert {thread for *_, thread in writer.events} == {"workbench-calllog_0"}


async def test_a_batch_being_written_at_shutdown_finishes_before_the_rest_and_the_release():
    writer = Writer()
    writer.proceed.clear()
    log = CallLog(writer.save, 10, 1, release=writer.release)
    async with anyio.create_task_group() as group:
        async with log.running():
            log.put(entry(1))
            await anyio.to_thread.run_sync(writer.saving.wait, 10)
            log.put(entry(2))
            # Shutdown begins while entry 1 is being written; let it finish only then.
            group.start_soon(anyio.to_thread.run_sync, writer.proceed.set)
        done = list(writer.events)
    assert [(kind, ats) for kind, ats, _ in done] == [
        ("save", [1.0]),
        ("save", [2.0]),
        ("release", []),
    ]
    assert writer.events == done  # nothing ran after running() returned
