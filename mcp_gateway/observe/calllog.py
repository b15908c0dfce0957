"""The call log's writer: entries go into a bounded queue on the request path (no await, no
I/O) and one task writes them in batches, through a thread of its own (the ORM never runs
on the event loop). A slow or locked database fills the queue; what does not fit is
dropped and counted (`workbench_call_log_dropped_total`), never waited for.

Batches are written by `save` (the gateway gives `database.records.save_calls`) and the
thread's resources let go by `release` (its database connection): nothing here knows
Django. The one thread runs them in order, so shutdown's last batches and `release` come
after a batch already being written, never beside it: nothing of the gateway's writes to
the database once it has stopped (within DRAIN_SECONDS).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from kernel.redaction import Redactor
from mcp_gateway.observe.metrics import metrics

logger = logging.getLogger("workbench.calllog")

FLUSH_SECONDS = 0.5  # the longest an entry waits for its batch
DRAIN_SECONDS = 5.0  # what shutdown gives the last batches


@dataclass(slots=True)
class CallEntry:
    """One open_toolbox or use_tool, as the call log keeps it. `arguments` and `result`
    are references, turned into stored text only for tenants that opted in, redacted by
    `redactors`: those of the connections that served the call (the same ones that redact
    their servers' log lines), never a second idea of what is secret."""

    at: float
    tenant_id: int
    key_id: int
    key_prefix: str
    client_name: str
    client_version: str
    session_id: str
    meta_tool: str
    duration_ms: float
    outcome: str
    error_code: str
    incident: str
    arguments: Any
    result: Any
    toolbox: str = ""
    server: str = ""
    tool: str = ""
    redactors: tuple[Redactor, ...] = ()
    signed_in_as: str = ""  # whose connected account the call used (`recorder.signed_in_as`)
    decision: str = ""  # what a tool policy decided ("denied by: toolbox 'prod', role viewer")


def _nothing() -> None:
    pass


class CallLog:
    def __init__(
        self,
        save: Callable[[Sequence[CallEntry]], None],
        max_queue: int,
        batch_size: int,
        release: Callable[[], None] = _nothing,
    ) -> None:
        self.save = save  # run in the writer's thread, one batch at a time
        self.release = release  # run in the writer's thread last, at shutdown
        self.batch_size = batch_size
        self._queue: asyncio.Queue[CallEntry] = asyncio.Queue(max_queue)
        # Taken from the queue, not yet handed to the thread (a batch gathering).
        self._gathering: list[CallEntry] = []
        self._thread: ThreadPoolExecutor | None = None

    def put(self, entry: CallEntry) -> None:
        try:
            self._queue.put_nowait(entry)
        except asyncio.QueueFull:
            metrics().call_log_dropped.inc()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[CallLog]:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-calllog")
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._write_forever)
                try:
                    yield self
                finally:
                    group.cancel_scope.cancel()
            # A batch the cancelled task was writing goes on in the thread; what follows
            # queues behind it. Bounded: a database that hangs does not hold shutdown.
            with anyio.move_on_after(DRAIN_SECONDS, shield=True):
                while self._gathering or not self._queue.empty():
                    await self._write(self._take_batch())
                await self._in_thread(self.release)
        finally:
            self._thread.shutdown(wait=False, cancel_futures=True)

    def _take_batch(self) -> list[CallEntry]:
        batch, self._gathering = self._gathering, []
        while len(batch) < self.batch_size:
            try:
                batch.append(self._queue.get_nowait())
            except asyncio.QueueEmpty:
                break
        return batch

    async def _write_forever(self) -> None:
        while True:
            self._gathering.append(await self._queue.get())
            # Let a burst gather into one batch (one transaction) before writing.
            if self._queue.qsize() < self.batch_size - 1:
                await anyio.sleep(FLUSH_SECONDS)
            await self._write(self._take_batch())

    async def _in_thread(self, func: Callable[..., None], *args: Any) -> None:
        """`func` in the writer's thread. Cancelled while it runs, it runs on (a thread
        cannot be stopped); whatever is handed over next waits for it."""
        assert self._thread is not None, "CallLog.running() first"
        await asyncio.wrap_future(self._thread.submit(func, *args))

    async def _write(self, batch: list[CallEntry]) -> None:
        if not batch:
            return
        m = metrics()
        try:
            await self._in_thread(self.save, batch)
        except Exception:
            m.call_log_failed.inc(len(batch))
            logger.exception("Could not write %d call log entries", len(batch))
            return
        m.call_log_written.inc(len(batch))
