"""The call log's writer: entries go into a bounded queue on the request path (no await, no
I/O) and one task writes them in batches, through a thread (the ORM never runs on the
event loop). A slow or locked database fills the queue; what does not fit is dropped and
counted (`workbench_call_log_dropped_total`), never waited for.

Batches are written by `save` (the gateway gives `database.records.save_calls`): nothing
here knows Django.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
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


class CallLog:
    def __init__(
        self, save: Callable[[Sequence[CallEntry]], None], max_queue: int, batch_size: int
    ) -> None:
        self.save = save  # run in a worker thread, one batch at a time
        self.batch_size = batch_size
        self._queue: asyncio.Queue[CallEntry] = asyncio.Queue(max_queue)

    def put(self, entry: CallEntry) -> None:
        try:
            self._queue.put_nowait(entry)
        except asyncio.QueueFull:
            metrics().call_log_dropped.inc()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[CallLog]:
        async with anyio.create_task_group() as group:
            group.start_soon(self._write_forever)
            try:
                yield self
            finally:
                group.cancel_scope.cancel()
        with anyio.move_on_after(DRAIN_SECONDS, shield=True):
            while not self._queue.empty():
                await self._write(self._take_batch())

    def _take_batch(self) -> list[CallEntry]:
        batch: list[CallEntry] = []
        while len(batch) < self.batch_size:
            try:
                batch.append(self._queue.get_nowait())
            except asyncio.QueueEmpty:
                break
        return batch

    async def _write_forever(self) -> None:
        while True:
            first = await self._queue.get()
            # Let a burst gather into one batch (one transaction) before writing.
            if self._queue.qsize() < self.batch_size - 1:
                await anyio.sleep(FLUSH_SECONDS)
            await self._write([first, *self._take_batch()])

    async def _write(self, batch: list[CallEntry]) -> None:
        if not batch:
            return
        m = metrics()
        try:
            await anyio.to_thread.run_sync(self.save, batch, abandon_on_cancel=True)
        except Exception:
            m.call_log_failed.inc(len(batch))
            logger.exception("Could not write %d call log entries", len(batch))
            return
        m.call_log_written.inc(len(batch))
