"""The SDK's stdio client transport with one change: a message has a size limit.

The SDK reads a server's stdout a line at a time into an unbounded buffer, so a server
that prints one endless line takes the gateway's memory with it. Here a line past the
limit is counted but not kept; the call it answers (found by its id at either end of the
line) gets an error naming the size, and the connection stays up. Spawning and shutting
down (own process group, close stdin, wait, kill the tree) are the SDK's own.

Built from private helpers of `mcp.client.stdio` (`_create_platform_compatible_process`,
`_parse_line`, `_drain_stdout`, `_stop_server_process`, `_aclose_all`) and its public
`get_default_environment`; tests/gateway/observe/test_sdk_pins.py pins their signatures, so an SDK
upgrade that changes them fails there, by name. Every difference from the SDK's
`stdio_client` (mcp 2.3):

- Lines are bounded: the SDK joins chunks into an unbounded buffer; `LineReader` keeps at
  most `max_message_chars` of a line (then only its two ends, to find the id).
- Encoding errors are strict: `StdioServerParameters.encoding_error_handler` is ignored
  (the SDK passes it to the decoder and the encoder). Bytes that do not decode end the
  reader with a warning, so the session sees the connection end.
- Writer flush timeout at shutdown: 2 s (`_WRITER_FLUSH_TIMEOUT`), not the SDK's 0.5 s.
- Each message read may be kept from the session (`admit`: the connection's bound on a
  server's notifications), before it costs a trip through the stream.
- Read errors are quiet: the SDK logs a broken stream or `ConnectionError` outside its
  shutdown with a traceback; here they end the reader silently, like a closed stream.
- Requests sent and not answered are tracked, so that in a sandbox the calls a server
  stopped by a limit leaves behind get an error naming the limit (after up to
  `_EXIT_WAIT` for its exit status); bubblewrap is probed before the spawn.
- No `_get_executable_command` (a Windows-only normalisation): POSIX only.
- No coverage-resync checkpoints (`cancel_shielded_checkpoint` after a timed-out flush and
  after the task group): they only matter to coverage on Python 3.11.
- The streams are yielded as a plain tuple, not the SDK's `TransportStreams`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.streams.text import TextReceiveStream
from mcp.client.stdio import (
    ServerProcess,
    StdioServerParameters,
    _aclose_all,
    _create_platform_compatible_process,
    _drain_stdout,
    _parse_line,
    _stop_server_process,
    get_default_environment,
)
from mcp.shared.message import SessionMessage
from mcp_types import INTERNAL_ERROR

from kernel.classified import ClassifiedFailure
from mcp_gateway.downstream.sandbox import network as sandbox_network
from mcp_gateway.downstream.sandbox.policy import (
    SandboxPolicy,
    effective_limits,
    exit_reason,
)
from mcp_gateway.downstream.sandbox.probe import probe
from mcp_gateway.downstream.sandbox.start import Started, open_sandboxed
from mcp_gateway.downstream.stderr import StderrPipe
from mcp_gateway.snapshots.sandbox import Limits, SandboxSpec

logger = logging.getLogger("workbench.downstream")

_WRITER_FLUSH_TIMEOUT = 2.0
_EXIT_WAIT = 2.0  # after a sandboxed server's output ends, for its exit status
_EDGE = 512  # characters kept from each end of an oversized line, to find its id
_ID = r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")'
_ID_AT_START = re.compile(r'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?' + _ID)
_ID_AT_END = re.compile(_ID + r"\s*\}\s*$")


def oversized_message(head: str, tail: str, size: int, limit: int) -> SessionMessage | None:
    """An error answer to the request an oversized line answers, if its id can be found."""
    found = _ID_AT_START.search(head) or _ID_AT_END.search(tail)
    if found is None:
        return None
    raw = found.group(1)
    request_id: Any = int(raw) if raw[0] != '"' else raw[1:-1]
    error = types.ErrorData(
        code=INTERNAL_ERROR,
        message=f"the result is too large ({size} bytes; the limit is {limit})",
    )
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


class LineReader:
    """Splits stdout chunks into lines, keeping at most `limit` characters of any line."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._start()

    def _start(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._over = False
        self._head = ""
        self._tail = ""

    def feed(self, chunk: str) -> list[str | tuple[str, str, int]]:
        """Complete lines: a line as a string, or an oversized one as (head, tail, size)."""
        done: list[str | tuple[str, str, int]] = []
        pieces = chunk.split("\n")
        for index, piece in enumerate(pieces):
            self._size += len(piece)
            if not self._over and self._size > self.limit:
                # Just went over: from now on keep only the line's two ends.
                self._over = True
                self._head = ("".join(self._parts) + piece[:_EDGE])[:_EDGE]
                self._parts = []
            if self._over:
                self._tail = (self._tail + piece[-_EDGE:])[-_EDGE:]
            else:
                self._parts.append(piece)
            if index < len(pieces) - 1:  # a newline ends this line
                if self._over:
                    done.append((self._head, self._tail, self._size))
                else:
                    done.append("".join(self._parts))
                self._start()
        return done


def _answered(message: SessionMessage, pending: set[Any]) -> None:
    if isinstance(message.message, types.JSONRPCResponse | types.JSONRPCError):
        pending.discard(message.message.id)


async def _after_exit(
    process: Any,
    limits: Limits | None,
    pending: set[Any],
    read_writer: Any,
    stderr: StderrPipe | None,
    started: Started | None = None,
    on_limit_kill: Callable[[], None] | None = None,
) -> None:
    """The server's output ended with calls unanswered (`initialize`, at start-up): record
    its exit code for the reason a client gets, and if a limit stopped it, say so."""
    with anyio.move_on_after(_EXIT_WAIT):
        await process.wait()
        if stderr is not None:
            await stderr.ended.wait()  # its last words may name the limit
    if stderr is not None:
        stderr.exit_code = process.returncode
    if limits is None:
        return
    last_words = list(stderr.tail) if stderr is not None else []
    oom_killed = started is not None and started.oom_killed()
    reason = exit_reason(process.returncode, limits, last_words, oom_killed)
    if reason is None:
        return
    logger.warning("sandboxed server stopped: %s", reason)
    if on_limit_kill is not None:
        on_limit_kill()
    for request_id in sorted(pending, key=str):
        error = types.ErrorData(code=INTERNAL_ERROR, message=reason)
        await read_writer.send(
            SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
        )
    pending.clear()


@asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters,
    errlog: TextIO | StderrPipe,
    max_message_chars: int,
    result_limit: int,
    sandbox: SandboxSpec | None = None,
    *,
    policy: SandboxPolicy,
    on_limit_kill: Callable[[], None] | None = None,
    admit: Callable[[SessionMessage], bool] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """`stdio_client`, with lines over `max_message_chars` answered as results over
    `result_limit` (the limit the operator set; a message adds its envelope to it).

    In a sandbox (`server` is then its command line), bubblewrap is probed first (a
    `ClassifiedFailure` says why it cannot start and how to fix it), and when the server
    is stopped by one of its limits, the calls it leaves unanswered get a reason naming it.
    `policy`: the gateway's sandbox policy (a benchmark builds its own the same way).
    `on_limit_kill`: told when a limit stopped the server (the connection's recorder).
    `admit`: sees each message as it is read, in order, and keeps from the session what it
    answers False for (the connection's notifications: dropped here, a flood costs no more
    than its reading).
    """
    stderr = errlog if isinstance(errlog, StderrPipe) else None
    limits = None
    started: Started | None = None
    env = get_default_environment() | (server.env or {})
    errors = errlog.writer if isinstance(errlog, StderrPipe) else errlog
    pending: set[Any] = set()  # ids of requests sent and not yet answered
    process: ServerProcess
    if sandbox is not None and policy.enabled:
        await probe(policy, sandbox.owner)
        if sandbox.network and (missing := sandbox_network.available()):
            raise ClassifiedFailure(
                f"the sandbox's network could not start; {sandbox_network.FIX}", missing
            )
        limits = effective_limits(sandbox, policy)
        process, started = await open_sandboxed(
            [server.command, *server.args], env, errors, sandbox, policy
        )
    else:
        process = await _create_platform_compatible_process(
            command=server.command, args=server.args, env=env, errlog=errors, cwd=server.cwd
        )
    # No awaits until the task group is entered, or a cancellation would leak the process.
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout
        lines = LineReader(max_message_chars)
        try:
            async with read_writer:
                try:
                    async for chunk in TextReceiveStream(process.stdout, encoding=server.encoding):
                        for line in lines.feed(chunk):
                            if isinstance(line, str):
                                message: SessionMessage | Exception | None = _parse_line(line)
                            else:
                                message = oversized_message(*line, limit=result_limit)
                                logger.warning("dropped a %d-character message", line[2])
                            if message is not None:
                                if isinstance(message, SessionMessage):
                                    if admit is not None and not admit(message):
                                        continue
                                    _answered(message, pending)
                                await read_writer.send(message)
                    if pending:
                        await _after_exit(
                            process, limits, pending, read_writer, stderr, started, on_limit_kill
                        )
                finally:
                    await _drain_stdout(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # the session or our own shutdown closed the streams
        except UnicodeDecodeError:
            logger.warning("the server wrote bytes that are not %s", server.encoding)

    async def stdin_writer() -> None:
        assert process.stdin
        try:
            async with write_reader:
                async for session_message in write_reader:
                    if isinstance(session_message.message, types.JSONRPCRequest):
                        pending.add(session_message.message.id)
                    data = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    await process.stdin.send((data + "\n").encode(server.encoding))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the session sees the end instead of hanging
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(_WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await _stop_server_process(process)
        if started is not None:
            await started.close()
        await _aclose_all(read_stream, write_stream, read_writer, write_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # every wait inside is bounded
                await shutdown()
            group.cancel_scope.cancel()
