"""A downstream stdio server's stderr, read off a pipe into the gateway's log, bounded.

A server may print forever (or print secrets it was given, its own argv say): each line's
server's secret values (its connection's redactor) are redacted, then the line is cut to
a length, and each connection has a byte budget per minute, past which lines are dropped
and counted instead of logged. A line with no end yet is logged (cut) once HOLD_BYTES long
and the rest of it up to its newline is dropped, so that no secret is split across two
pieces, each too short to be recognised. The last lines are kept (redacted) for the log
line of a failed start; a client never sees them.
"""

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from typing import TextIO

logger = logging.getLogger("workbench.downstream.stderr")

MAX_LINE = 2000
HOLD_BYTES = 4 * MAX_LINE  # a secret starting before the cut is whole in what is redacted
BUDGET_BYTES_PER_MINUTE = 64 * 1024
TAIL_LINES = 10
TAIL_LINE_CHARS = 300


class StderrPipe:
    def __init__(self, label: str, redact: Callable[[str], str] | None = None) -> None:
        self.label = label
        self._redact = redact or (lambda text: text)
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._read_fd: int | None = read_fd
        self.writer: TextIO = os.fdopen(write_fd, "w")  # handed to the child as its stderr
        self._buffer = b""
        self._skipping = False  # the rest of a line already logged, cut
        self._window_start = time.monotonic()
        self._window_bytes = 0
        self._dropped = 0
        self.last_line = ""
        self.ended = asyncio.Event()  # the child's end of the pipe closed, and all was read
        self.exit_code: int | None = None  # known when the server exited with calls pending
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(read_fd, self._on_readable)

    def child_started(self) -> None:
        """Close our copy of the write end so that the child's exit reaches us as EOF."""
        if not self.writer.closed:
            self.writer.close()

    def close(self) -> None:
        self.child_started()
        if self._read_fd is not None:
            self._loop.remove_reader(self._read_fd)
            self._drain()
            os.close(self._read_fd)
            self._read_fd = None
            self._flush(final=True)
            self.ended.set()

    def _drain(self) -> None:
        """Read what the child left in the pipe (its last words explain a failed start)."""
        assert self._read_fd is not None
        try:
            while chunk := os.read(self._read_fd, 65536):
                self._buffer += chunk
                if len(self._buffer) > HOLD_BYTES:
                    self._flush(final=False)
        except BlockingIOError:
            pass

    def _on_readable(self) -> None:
        assert self._read_fd is not None
        try:
            chunk = os.read(self._read_fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.close()
            return
        self._buffer += chunk
        self._flush(final=False)

    def _flush(self, *, final: bool) -> None:
        *lines, rest = self._buffer.split(b"\n")
        if self._skipping:  # the end of a line logged (cut) already
            if lines:
                lines.pop(0)
                self._skipping = False
            else:
                rest = b""
        if final and rest:
            lines.append(rest)
            rest = b""
        if len(rest) > HOLD_BYTES:  # a line with no end yet: log its start, drop its rest
            lines.append(rest)
            rest = b""
            self._skipping = True
        self._buffer = rest
        for line in lines:
            self._emit(line.decode("utf-8", "replace").rstrip())
        if final and self._dropped:
            logger.warning("[%s] %d stderr lines dropped (over budget)", self.label, self._dropped)
            self._dropped = 0

    def _emit(self, text: str) -> None:
        now = time.monotonic()
        if now - self._window_start >= 60:
            if self._dropped:
                logger.warning(
                    "[%s] %d stderr lines dropped (over budget)", self.label, self._dropped
                )
            self._window_start, self._window_bytes, self._dropped = now, 0, 0
        self._window_bytes += min(len(text), MAX_LINE)
        text = self._redact(text)[:MAX_LINE]
        if text:
            self.last_line = text
            self.tail.append(text[:TAIL_LINE_CHARS])
        if self._window_bytes > BUDGET_BYTES_PER_MINUTE:
            self._dropped += 1
            return
        if text:
            logger.info("[%s] %s", self.label, text, extra={"source": self.label})
