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
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from mcp_gateway import __version__, failures, telemetry
from mcp_gateway.config import ServerConfig
from mcp_gateway.envrefs import ReferenceEnviron, ReferencePolicy, referenced_values
from mcp_gateway.failures import ClassifiedFailure, Redactor, current_redactor
from mcp_gateway.pins import digests
from mcp_gateway.respawn import RespawnPolicy, ServerHealth
from mcp_gateway.stderr import StderrPipe
from mcp_gateway.transports import open_transport

logger = logging.getLogger("workbench.downstream")

CLIENT_INFO = types.Implementation(name="workbench-gateway", version=__version__)


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
    """A downstream call failed; `timed_out` tells TIMEOUT from DOWNSTREAM_ERROR, and
    `incident` names the log line of a failure the gateway describes (None for the
    server's own JSON-RPC error, which is the tool's answer)."""

    def __init__(
        self, reason: str, *, timed_out: bool = False, incident: str | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.timed_out = timed_out
        self.incident = incident


class DiscoveryLimit(ClassifiedFailure):
    """A server's tool list is past one of the gateway's bounds."""


@dataclass(frozen=True, slots=True)
class DiscoveryBounds:
    max_tools: int
    max_pages: int
    max_bytes: int


def gateway_settings() -> tuple[ReferencePolicy, DiscoveryBounds]:
    """What the operator set for references and discovery, read at each connect so that
    a change of settings (or a test's) applies to the next connection."""
    from django.conf import settings

    own = {name for name in dir(settings) if name.isupper()}
    policy = ReferencePolicy(
        settings.WORKBENCH_ENV_REFERENCES, own | set(settings.WORKBENCH_ENV_FILE_NAMES)
    )
    bounds = DiscoveryBounds(
        settings.WORKBENCH_MAX_TOOLS_PER_SERVER,
        settings.WORKBENCH_MAX_TOOL_PAGES,
        settings.WORKBENCH_MAX_TOOL_BYTES,
    )
    return policy, bounds


def redactor_for(server: ServerConfig, environ: Mapping[str, str]) -> Redactor:
    """Everything secret about one server: its env and header values, raw and expanded,
    and its secret catalog parameters (in args or URL too). The one redactor of its log
    lines, stderr, incidents and call log payloads."""
    env_values = [value for _, value in server.env]
    header_values = [value for _, value in server.headers]
    strings = [server.command, *server.args, server.url or "", *env_values, *header_values]
    expanded = referenced_values(strings, environ)
    secret = [*env_values, *expanded, *server.secrets]
    return Redactor(failures.secret_values(secret, header_values))


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
        server: ServerConfig,
        label: str,
        connect_timeout: float,
        health: ServerHealth | None = None,
        *,
        max_result_bytes: int,
    ) -> None:
        self.max_result_bytes = max_result_bytes
        self.health = health or ServerHealth(RespawnPolicy())
        self.server = server
        self.label = label
        self.connect_timeout = connect_timeout
        self.tools: list[types.Tool] = []
        self.digests: dict[str, str] = {}  # tool name: its pins digest, made once
        self.error: str | None = None  # the client's phrase
        self.incident: str | None = None  # the log line that tells the rest
        self._failure_detail = ""
        self._redact = Redactor()
        self._stderr: StderrPipe | None = None
        self._stream_ended = False
        self.in_flight = 0
        self.last_used = time.monotonic()
        self._session: ClientSession | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._closed = anyio.Event()

    @property
    def redact(self) -> Redactor:
        """This server's redactor (known once `run` starts), for what is kept of its calls."""
        return self._redact

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
        phase = "start"
        policy, bounds = gateway_settings()
        environ = ReferenceEnviron(os.environ, policy)
        self._redact = redactor_for(self.server, environ)
        current_redactor.set(self._redact)  # this task and the SDK's tasks it starts
        telemetry.current_server.set(self.label)  # whose limit kill the transport counts
        connected = False
        # One deadline over the whole connect, transport included (an SSE server may
        # accept and never send its endpoint); lifted once connected. A scope, not
        # fail_after, so that the SDK's own scopes opened inside it close first.
        connecting = anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout)
        try:
            with connecting:
                async with AsyncExitStack() as stack:
                    if self.server.is_stdio:
                        stderr = self._stderr = StderrPipe(self.label, self._redact)
                    transport = open_transport(
                        self.server,
                        environ,
                        stderr=stderr,
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
                    phase = "initialize"
                    await session.initialize()
                    phase = "list"
                    self.tools = await self._list_all_tools(session, bounds)
                    self.digests = digests(self.tools)
                    connecting.deadline = math.inf
                    self._session = session
                    logger.info("[%s] connected (%d tools)", self.label, len(self.tools))
                    self._ready.set()
                    connected = True
                    telemetry.downstream_started(self.label)
                    await self._stop.wait()
            if connecting.cancelled_caught and not self._ready.is_set():
                self._fail(
                    self._timeout_phrase(phase),
                    f"{phase}: no answer within {self.connect_timeout:g}s",
                )
        except Exception as exc:  # any failure to connect is reported, never raised
            if not self._ready.is_set():
                exit_code = stderr.exit_code if stderr else None
                self._fail(
                    *failures.classify(
                        exc, remote=not self.server.is_stdio, phase=phase, exit_code=exit_code
                    )
                )
            else:
                logger.warning("[%s] connection ended: %s", self.label, self._redact(repr(exc)))
        finally:
            self._session = None
            if stderr:
                stderr.close()
            if self.error and not self._ready.is_set():
                incident = failures.report(
                    self.label,
                    self.error,
                    self._failure_detail,
                    stderr_tail=stderr.tail if stderr else (),
                    redact=self._redact,
                )
                self.incident = incident.id
                self.health.failed(self.error)
                telemetry.downstream_failed_to_start(self.label)
            if connected:
                telemetry.downstream_ended(self.label)
            self._stop.set()
            self._ready.set()
            self._closed.set()

    def _fail(self, phrase: str, detail: str) -> None:
        self.error, self._failure_detail = phrase, detail

    def _timeout_phrase(self, phase: str) -> str:
        if not self.server.is_stdio:
            return failures.UNREACHABLE  # one phrase for every remote failure to connect
        return failures.LIST_TIMEOUT if phase == "list" else failures.START_TIMEOUT

    def _on_end_of_stream(self) -> None:
        """The server went away on its own (exited, crashed, dropped the stream), maybe
        while idle: mark the connection dead so the next caller gets a new one."""
        self._stream_ended = True
        if self._ready.is_set() and not self._stop.is_set():
            self._broken()

    async def wait_ready(self) -> None:
        await self._ready.wait()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def stop(self) -> None:
        self._stop.set()

    @staticmethod
    async def _list_all_tools(session: ClientSession, bounds: DiscoveryBounds) -> list[types.Tool]:
        """Every page of tools/list, within the gateway's bounds on tools, pages and the
        bytes of their definitions (a server must not fill the gateway's memory)."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        pages = size = 0
        while True:
            if pages >= bounds.max_pages:
                raise DiscoveryLimit(
                    f"the server lists its tools in more than {bounds.max_pages} pages "
                    "(the gateway's limit)"
                )
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            pages += 1
            tools.extend(page.tools)
            if len(tools) > bounds.max_tools:
                raise DiscoveryLimit(
                    f"the server offers more than {bounds.max_tools} tools (the gateway's limit)"
                )
            size += sum(len(tool.model_dump_json(exclude_none=True)) for tool in page.tools)
            if size > bounds.max_bytes:
                raise DiscoveryLimit(
                    f"the server's tool definitions exceed {bounds.max_bytes} bytes "
                    "(the gateway's limit)"
                )
            cursor = page.next_cursor
            if not cursor:
                return tools

    def has_tool(self, name: str) -> bool:
        return name in self.digests

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
        token = current_redactor.set(self._redact)
        try:
            # The gateway's own deadline, not the SDK's read timeout: the SDK reports its
            # timeout as an MCPError of code -32001, which a server may send as its own
            # error too. What happened decides: this scope's deadline passed, or not.
            # On cancellation the SDK sends the server `notifications/cancelled`.
            # send_request, not call_tool: the result is passed on as it came, without
            # validating it against the tool's outputSchema here (the client may).
            with (
                anyio.move_on_after(timeout) as deadline,
                telemetry.downstream_span(self.label, name),
            ):
                result = await session.send_request(
                    types.CallToolRequest(
                        params=types.CallToolRequestParams(name=name, arguments=arguments)
                    ),
                    types.CallToolResult,
                    progress_callback=progress_callback,
                )
                telemetry.downstream_result(result)
            if deadline.cancelled_caught:
                raise self._call_failure(
                    f"timed out after {timeout:g}s",
                    f"tools/call {name}: no answer within {timeout:g}s",
                    timed_out=True,
                )
        except MCPError as exc:
            # CONNECTION_CLOSED (-32000) is also a code a server may send: closed means the
            # stream really ended.
            if exc.code == CONNECTION_CLOSED and self._stream_ended:
                raise self._broken() from None
            # The server's own JSON-RPC error: the tool's answer, passed on unchanged.
            raise DownstreamFailure(exc.message) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise self._broken() from None
        except DownstreamFailure:
            raise
        except Exception as exc:  # e.g. a result that is not a CallToolResult
            raise self._call_failure(
                "the server sent an invalid result", f"tools/call {name}: {exc!r}"
            ) from None
        finally:
            current_redactor.reset(token)
            self.in_flight -= 1
            self.last_used = time.monotonic()
        self.health.succeeded()
        size = result_size(result)
        if size > self.max_result_bytes:
            raise DownstreamFailure(
                f"the result is too large ({size} bytes; the limit is {self.max_result_bytes})"
            )
        return result

    def _call_failure(
        self, phrase: str, detail: str, *, timed_out: bool = False
    ) -> DownstreamFailure:
        """A failure the gateway describes: the phrase for the client, the rest logged."""
        tail = self._stderr.tail if self._stderr else ()
        incident = failures.report(
            self.label, phrase, detail, stderr_tail=tail, redact=self._redact
        )
        return DownstreamFailure(phrase, timed_out=timed_out, incident=incident.id)

    def _broken(self) -> DownstreamFailure:
        """The server died under us: stop (the pool replaces it) and count the failure."""
        if not self._stop.is_set():
            self.stop()
            self.health.failed("the server connection closed")
            telemetry.downstream_crashed(self.label)
        return self._call_failure("the server connection closed", "the server's stream ended")
