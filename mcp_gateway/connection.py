"""One live downstream MCP session, owned by one task.

The SDK's transports and `ClientSession` hold anyio cancel scopes that must be exited by
the task that entered them, so a dedicated owner task (started in the pool's task group)
enters them, waits for a stop signal, and exits them. Request handlers only send calls
through the session; calls run concurrently on it, told apart by JSON-RPC ids.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from mcp_gateway.config import ServerConfig
from mcp_gateway.envrefs import ExpansionError
from mcp_gateway.respawn import RespawnPolicy, ServerHealth
from mcp_gateway.stderr import StderrPipe
from mcp_gateway.transports import open_transport

logger = logging.getLogger("workbench.downstream")

CLIENT_INFO = types.Implementation(name="workbench-gateway", version="0.1.0")


@dataclass(frozen=True, slots=True)
class PoolKey:
    tenant_id: int
    toolbox: str
    server: str
    fingerprint: str

    @property
    def place(self) -> tuple[int, str, str]:
        """Which server this is, whatever configuration it was connected with."""
        return (self.tenant_id, self.toolbox, self.server)


class DownstreamFailure(Exception):
    """A downstream call failed; `timed_out` tells TIMEOUT from DOWNSTREAM_ERROR."""

    def __init__(self, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.timed_out = timed_out


def _first_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """A one-line reason for a client: what failed, never a traceback or a secret."""
    exc = _first_leaf(exc)
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ExpansionError | DownstreamFailure):
        return str(exc)
    if isinstance(exc, MCPError):
        return exc.message
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename}"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def result_size(result: types.CallToolResult) -> int:
    """The bytes a result carries (texts, binary data, structured content), cheaply."""
    size = 0
    for item in result.content:
        resource = getattr(item, "resource", None)
        for part in (item, resource):
            for field in ("text", "data", "blob"):
                value = getattr(part, field, None)
                if isinstance(value, str):
                    size += len(value)
    if result.structured_content is not None:
        size += len(json.dumps(result.structured_content, separators=(",", ":")))
    return size


class _WatchedStream(ObjectReceiveStream[Any]):
    """The transport's read stream, telling its owner when it ends: the only sign that
    an idle server has died."""

    def __init__(self, inner: ObjectReceiveStream[Any], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's contextvars from here
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


class Connection:
    def __init__(
        self,
        key: PoolKey,
        server: ServerConfig,
        label: str,
        connect_timeout: float,
        health: ServerHealth | None = None,
        max_result_bytes: int = 10 * 1024 * 1024,
    ) -> None:
        self.key = key
        self.max_result_bytes = max_result_bytes
        self.health = health or ServerHealth(RespawnPolicy())
        self.server = server
        self.label = label
        self.connect_timeout = connect_timeout
        self.tools: list[types.Tool] = []
        self.error: str | None = None
        self.in_flight = 0
        self.last_used = time.monotonic()
        self._session: ClientSession | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._closed = anyio.Event()

    @property
    def alive(self) -> bool:
        return self._session is not None and not self._stop.is_set()

    @property
    def is_ready(self) -> bool:
        """Connected, or given up: no longer connecting."""
        return self._ready.is_set()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def run(self) -> None:
        """The owner task: connect, serve until told to stop, then disconnect."""
        stderr: StderrPipe | None = None
        # One deadline over the whole connect, transport included (an SSE server may
        # accept and never send its endpoint); lifted once connected. A scope, not
        # fail_after, so that the SDK's own scopes opened inside it close first.
        connecting = anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout)
        try:
            with connecting:
                async with AsyncExitStack() as stack:
                    if self.server.is_stdio:
                        stderr = StderrPipe(self.label)
                    transport = open_transport(
                        self.server,
                        os.environ,
                        stderr=stderr.writer if stderr else None,
                        connect_timeout=self.connect_timeout,
                        max_result_bytes=self.max_result_bytes,
                    )
                    read, write = (await stack.enter_async_context(transport))[:2]
                    if stderr:
                        stderr.child_started()
                    session = await stack.enter_async_context(
                        ClientSession(
                            _WatchedStream(read, self._on_end_of_stream),
                            write,
                            client_info=CLIENT_INFO,
                        )
                    )
                    await session.initialize()
                    self.tools = await self._list_all_tools(session)
                    connecting.deadline = math.inf
                    self._session = session
                    logger.info("[%s] connected (%d tools)", self.label, len(self.tools))
                    self._ready.set()
                    await self._stop.wait()
            if connecting.cancelled_caught and not self._ready.is_set():
                self.error = f"timed out after {self.connect_timeout:g}s while connecting"
        except Exception as exc:  # any failure to connect is reported, never raised
            self.error = describe(exc)
        finally:
            self._session = None
            if stderr:
                stderr.close()
                if self.error and stderr.last_line and not self._ready.is_set():
                    self.error += f" (stderr: {stderr.last_line[:300]})"
            if self.error and not self._ready.is_set():
                logger.warning("[%s] connection failed: %s", self.label, self.error)
                self.health.failed(self.error)
            self._stop.set()
            self._ready.set()
            self._closed.set()

    def _on_end_of_stream(self) -> None:
        """The server went away on its own (exited, crashed, dropped the stream), maybe
        while idle: mark the connection dead so the next caller gets a new one."""
        if self._ready.is_set() and not self._stop.is_set():
            self._broken()

    async def wait_ready(self) -> None:
        await self._ready.wait()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def stop(self) -> None:
        self._stop.set()

    @staticmethod
    async def _list_all_tools(session: ClientSession) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    def has_tool(self, name: str) -> bool:
        return any(tool.name == name for tool in self.tools)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        progress_callback: Any = None,
    ) -> types.CallToolResult:
        # The pool hands each caller the server's newest settings: an admin may have
        # changed the timeout since this connection was made.
        timeout = self.server.timeout
        session = self._session
        if session is None:
            raise DownstreamFailure("the server connection is closed")
        self.in_flight += 1
        self.last_used = time.monotonic()
        try:
            # send_request, not call_tool: the result is passed on as it came, without
            # validating it against the tool's outputSchema here (the client may).
            result = await session.send_request(
                types.CallToolRequest(
                    params=types.CallToolRequestParams(name=name, arguments=arguments)
                ),
                types.CallToolResult,
                request_read_timeout_seconds=timeout,
                progress_callback=progress_callback,
            )
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise DownstreamFailure(f"timed out after {timeout:g}s", timed_out=True) from None
            if exc.code == CONNECTION_CLOSED:
                raise self._broken() from None
            raise DownstreamFailure(exc.message) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise self._broken() from None
        except Exception as exc:  # e.g. a result that is not a CallToolResult
            raise DownstreamFailure(describe(exc)) from None
        finally:
            self.in_flight -= 1
            self.last_used = time.monotonic()
        self.health.succeeded()
        size = result_size(result)
        if size > self.max_result_bytes:
            raise DownstreamFailure(
                f"the result is too large ({size} bytes; the limit is {self.max_result_bytes})"
            )
        return result

    def _broken(self) -> DownstreamFailure:
        """The server died under us: stop (the pool replaces it) and count the failure."""
        if not self._stop.is_set():
            self.stop()
            self.health.failed("the server connection closed")
            logger.warning("[%s] the server connection closed", self.label)
        return DownstreamFailure("the server connection closed")
