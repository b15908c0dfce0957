"""One live downstream MCP session, owned by one task.

The SDK's transports and `ClientSession` hold anyio cancel scopes that must be exited by
the task that entered them, so a dedicated owner task (started in the pool's task group)
enters them, waits for a stop signal, and exits them. Request handlers only send calls
through the session; calls run concurrently on it, told apart by JSON-RPC ids.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, suppress
from functools import partial
from typing import Any, TypeVar, cast

import anyio
import httpx2
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.session import ClientSession
from mcp.client.subscriptions import Subscription, listen
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from kernel.egress import UNREACHABLE
from kernel.pins import definition, digest
from kernel.redaction import Redactor, current_redactor
from mcp_gateway import __version__
from mcp_gateway.downstream import failures
from mcp_gateway.downstream.discovery import (
    DiscoveryBounds,
    connect_settings,
    list_all_tools,
    redactor_for,
)
from mcp_gateway.downstream.envelope import (
    DeclaringSession,
    calling_capabilities,
    negotiate,
    offers_modern,
)
from mcp_gateway.downstream.envrefs import ReferenceEnviron
from mcp_gateway.downstream.notifications import LogSink, Notifications
from mcp_gateway.downstream.respawn import RespawnPolicy, ServerHealth
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.downstream.server_questions import AskClient, Asking, ServerQuestions
from mcp_gateway.downstream.stderr import StderrPipe
from mcp_gateway.downstream.streams import WatchedStream, result_size
from mcp_gateway.downstream.transports import open_transport
from mcp_gateway.observe import tracing
from mcp_gateway.observe.recorder import Recorder
from mcp_gateway.options import current_options
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef

logger = logging.getLogger("workbench.downstream")

CLIENT_INFO = types.Implementation(name="workbench-gateway", version=__version__)
ResultT = TypeVar("ResultT", bound=types.Result)
# Log messages queued for one call's client, at most; more are dropped (the log has them).
CALL_LOG_QUEUE = 256
# What of a client's request `_meta` is not passed on: the progress token (the gateway asks
# for progress with its own) and the protocol's reserved keys, which describe the client's
# session with the gateway (its protocol version, capabilities, log level), not this one.
RESERVED_META_PREFIX = "io.modelcontextprotocol/"
NOT_PASSED_ON = frozenset({"progressToken", "progress_token"})

LogParams = types.LoggingMessageNotificationParams
LogForward = Callable[[LogParams], Awaitable[None]]
# A tools/call's answer: its result, or (2026-07-28) the server's request for input.
CallAnswer = types.CallToolResult | types.InputRequiredResult
_CALL_ANSWER: TypeAdapter[CallAnswer] = TypeAdapter(CallAnswer)


def _own_meta_in_place(result: ResultT) -> ResultT:
    """A result this connection has just parsed, which nothing else holds, without the
    protocol's reserved `_meta` keys (a 2026-07-28 server stamps its `serverInfo` there):
    they describe the server's session with the gateway, not the client's; the server's
    own keys pass on unchanged. Its `_meta` replaced rather than the whole result copied:
    a 2026-07-28 server stamps every result, so this runs on every call."""
    meta = result.meta
    if meta:
        kept = {key: meta[key] for key in meta if not key.startswith(RESERVED_META_PREFIX)}
        if len(kept) != len(meta):  # set as the model keeps it: no validation to run
            result.__dict__["meta"] = kept or None
    return result


def passed_on_meta(meta: Mapping[str, Any] | None) -> types.RequestParamsMeta | None:
    """The part of a client's request `_meta` that the downstream request carries: custom
    keys and the trace context (`traceparent`, `tracestate`), as they came."""
    if not meta:
        return None
    kept = {
        key: value
        for key, value in meta.items()
        if key not in NOT_PASSED_ON and not key.startswith(RESERVED_META_PREFIX)
    }
    return cast("types.RequestParamsMeta", kept) if kept else None


class Connection:
    def __init__(
        self,
        server: ServerConfig,
        ref: ServerRef,
        connect_timeout: float,
        health: ServerHealth | None = None,
        *,
        max_result_bytes: int,
        auth: httpx2.Auth | None = None,
        sandbox: SandboxPolicy | None = None,
        recorder: Recorder | None = None,
        declares: Mapping[str, Any] | None = None,
    ) -> None:
        self.recorder = recorder or Recorder()  # the gateway's: its metrics
        # The client capabilities (wire form, relayed ones: `envelope.canonical`) declared
        # at a 2025-11-25 initialize: none for the pool's base connection of a server.
        self.declares: dict[str, Any] = dict(declares or {})
        self.max_result_bytes = max_result_bytes
        self.sandbox = sandbox  # the gateway's policy (None: the settings' at connect)
        self.auth = auth  # a signed-in server's (`downstream.connected`): on every request
        self.health = health or ServerHealth(RespawnPolicy())
        self.server = server
        self.ref = ref
        self.label = str(ref)  # its log lines' name
        self.connect_timeout = connect_timeout
        self.tools: list[types.Tool] = []
        # Each tool's definition (kernel.pins) and its digest by name: made at connect, and
        # again at each listing the server's `list_changed` asks for.
        self.definitions: list[dict[str, Any]] = []
        self.digests: dict[str, str] = {}
        # Bumped at every listing after the first: what was made from `tools` (an open's
        # answer, a search index) compares it to know it is stale.
        self.tools_version = 0
        self._relist_wanted = anyio.Event()
        self._relisting: anyio.Event | None = None  # set once the wanted listing is done
        # The pool's: asks the server's other connections (its base, its declared sets'),
        # which may not hear it, to list again on this one's `list_changed`; their
        # listings, which a call during the change answers after, as after its own.
        self.list_siblings: Callable[[], list[anyio.Event]] | None = None
        self._sibling_listings: list[anyio.Event] = []
        self._listed = anyio.Event()  # set (and replaced) at each listing, and at the end
        # Calls in flight: each one's queue of log messages for its client (None: its
        # client takes none). A log message goes to a call only when it is the one.
        self._calls: dict[int, MemoryObjectSendStream[LogParams] | None] = {}
        # ... and what each one's client declared and how to ask it: a server spoken to in
        # 2025-11-25 asks by a request, answered for the one call in flight.
        self._asking: dict[int, Asking] = {}
        self._call_ids = 0
        self.notifications = Notifications(
            self.label,
            ref.tenant,
            ref.server,
            lambda: self._redact,
            self._log_sink,
            self._tools_changed,
            partial(self.recorder.downstream_notifications_dropped, ref),
        )
        self.error: str | None = None  # the client's phrase
        self.incident: str | None = None  # the log line that tells the rest
        self.failure: failures.Story | None = None  # for the admin's cause (`causes`)
        self._failure_detail = ""
        self._failure_error: BaseException | None = None
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
        options = current_options()
        policy, bounds = connect_settings(options)
        sandbox = self.sandbox or SandboxPolicy.of(options)
        environ = ReferenceEnviron(os.environ, policy)
        self._redact = redactor_for(self.server, environ)
        current_redactor.set(self._redact)  # this task and the SDK's tasks it starts
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
                        auth=self.auth,
                        sandbox=sandbox,
                        on_limit_kill=partial(self.recorder.downstream_limit_kill, self.ref),
                        admit=self.notifications.admit,  # a stdio server's, as it is read
                    )
                    read, write = (await stack.enter_async_context(transport))[:2]
                    questions = ServerQuestions(
                        self.label, lambda: list(self._asking.values()), self.declares
                    )
                    if stderr:
                        stderr.child_started()
                    session = await stack.enter_async_context(
                        DeclaringSession(
                            WatchedStream(
                                read,
                                self._on_end_of_stream,
                                None if self.server.is_stdio else self.notifications.admit,
                            ),
                            write,
                            client_info=CLIENT_INFO,
                            # 2026-07-28 asks log messages per request: every level, for
                            # the gateway's log (a client gets those it asked for).
                            log_level="debug",
                            # Its own set declared at a 2025-11-25 initialize (a 2026-07-28
                            # server is told each call's: `envelope`), answered for the call.
                            declares=self.declares,
                            elicitation_callback=questions.elicit,
                            sampling_callback=questions.sample,
                            list_roots_callback=questions.roots,
                        )
                    )
                    phase = "initialize"
                    # A stdio server is asked for 2026-07-28 first (the calling client's
                    # capabilities per request: `envelope`); a remote one keeps 2025-11-25,
                    # whose `list_changed` comes on the standalone stream.
                    await negotiate(session, modern=offers_modern(self.server))
                    phase = "list"
                    await self._subscribe(stack, session)  # before the listing
                    self.tools = await list_all_tools(session, bounds)
                    self.definitions = [definition(tool) for tool in self.tools]
                    self.digests = {item["name"]: digest(item) for item in self.definitions}
                    connecting.deadline = math.inf
                    self._session = session
                    logger.info("[%s] connected (%d tools)", self.label, len(self.tools))
                    self._ready.set()
                    connected = True
                    self.recorder.downstream_started(self.ref)
                    async with anyio.create_task_group() as relisting:
                        relisting.start_soon(self._relist_forever, session, bounds)
                        await self._stop.wait()
                        relisting.cancel_scope.cancel()
            if connecting.cancelled_caught and not self._ready.is_set():
                self._fail(
                    self._timeout_phrase(phase),
                    f"{phase}: no answer within {self.connect_timeout:g}s",
                )
                self._failure_error = TimeoutError(phase)
        except Exception as exc:  # any failure to connect is reported, never raised
            if not self._ready.is_set():
                exit_code = stderr.exit_code if stderr else None
                self._fail(
                    *failures.classify(
                        exc, remote=not self.server.is_stdio, phase=phase, exit_code=exit_code
                    )
                )
                self._failure_error = failures.first_leaf(exc)
            else:
                logger.warning("[%s] connection ended: %s", self.label, self._redact(repr(exc)))
        finally:
            self._session = None
            self.notifications.close()
            self._listed.set()
            if self._relisting is not None:
                self._relisting.set()
            if stderr:
                stderr.close()
            if self.error and not self._ready.is_set():
                tail = tuple(stderr.tail) if stderr else ()
                incident = failures.report(
                    self.label,
                    self.error,
                    self._failure_detail,
                    stderr_tail=tail,
                    redact=self._redact,
                )
                self.incident = incident.id
                self.failure = failures.Story(
                    self.error,
                    incident.id,
                    self._redact(self._failure_detail),
                    tuple(line for line in tail if line),  # redacted as they were read
                    self._failure_error,
                )
                self.health.failed(self.error)
                self.recorder.downstream_failed_to_start(self.ref)
            if connected:
                self.recorder.downstream_ended(self.ref)
            self._stop.set()
            self._ready.set()
            self._closed.set()

    def _fail(self, phrase: str, detail: str) -> None:
        self.error, self._failure_detail = phrase, detail

    def _timeout_phrase(self, phase: str) -> str:
        if not self.server.is_stdio:
            return UNREACHABLE  # one phrase for every remote failure to connect
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

    def has_tool(self, name: str) -> bool:
        return name in self.digests

    # The server's tools, listed again when it says they changed

    def _tools_changed(self) -> None:
        """The server sent `notifications/tools/list_changed` (read in order, so before the
        answer of a call during which it was sent)."""
        self.list_again()
        if self.list_siblings is not None:
            pending = [event for event in self._sibling_listings if not event.is_set()]
            for event in self.list_siblings():
                if all(event is not other for other in pending):
                    pending.append(event)
            self._sibling_listings = pending

    def list_again(self) -> anyio.Event:
        """Lists the tools again (once, however many ask meanwhile); the event is set once
        that listing is done, or the connection ended."""
        self._relist_wanted.set()
        if self._relisting is None:
            self._relisting = anyio.Event()
        return self._relisting

    async def _subscribe(
        self, stack: AsyncExitStack, session: ClientSession
    ) -> Subscription | None:
        """On 2026-07-28 a server announces a change only on a `subscriptions/listen`
        stream that asked for it: one for the connection's life, acknowledged before the
        first listing (so no change is missed), when the server's tools say they change.
        The announcement itself is read off the stream by `notifications`, in order, as a
        2025-11-25 server's is (so a call answers after the listing it caused). None: no
        such stream (2025-11-25 announces on the session itself)."""
        if session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None
        tools = session.server_capabilities.tools if session.server_capabilities else None
        if tools is None or not tools.list_changed:
            return None
        try:
            return await stack.enter_async_context(listen(session, tools_list_changed=True))
        except Exception as exc:  # the server's tools are listed; changes are not heard
            logger.warning(
                "[%s] listening for changes refused: %s", self.label, self._redact(repr(exc))
            )
            return None

    async def _relist_forever(self, session: ClientSession, bounds: DiscoveryBounds) -> None:
        """List again after each `list_changed`; those that come during a listing make one
        more listing, not one each."""
        while True:
            await self._relist_wanted.wait()
            self._relist_wanted = anyio.Event()
            try:
                tools = await list_all_tools(session, bounds)
            except Exception as exc:  # the tools listed before stay; the next change retries
                logger.warning(
                    "[%s] listing the tools again failed: %s", self.label, self._redact(repr(exc))
                )
            else:
                self._replace_tools(tools)
            if not self._relist_wanted.is_set() and self._relisting is not None:
                self._relisting.set()
                self._relisting = None

    def _replace_tools(self, tools: list[types.Tool]) -> None:
        definitions = [definition(tool) for tool in tools]
        self.tools = tools
        self.definitions = definitions
        self.digests = {item["name"]: digest(item) for item in definitions}
        self.tools_version += 1
        logger.info(
            "[%s] tools listed again (%d tools, version %d)",
            self.label,
            len(tools),
            self.tools_version,
        )
        listed, self._listed = self._listed, anyio.Event()
        listed.set()

    async def listing_after(self, version: int) -> None:
        """Returns once the tools were listed again after `version`, or the connection ended."""
        while self.tools_version == version and not self._closed.is_set():
            await self._listed.wait()

    async def _listed_if_changed(self) -> None:
        """A call during which the server announced a change answers after the new listing,
        so that the client's next `open_toolbox` shows it (bounded by the connect timeout)."""
        pending = [self._relisting, *self._sibling_listings]
        waits = [event for event in pending if event is not None and not event.is_set()]
        if waits:
            with anyio.move_on_after(self.connect_timeout):
                for event in waits:
                    await event.wait()

    # Log messages, to the call they belong to

    def _log_sink(self) -> LogSink | None:
        if len(self._calls) != 1:
            return None  # no call, or several: whose it is cannot be told
        queue = next(iter(self._calls.values()))
        if queue is None:
            return None

        def put(params: types.LoggingMessageNotificationParams) -> None:
            # The client slow, or its call over: the gateway's log has the message.
            with suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                queue.send_nowait(params)

        return put

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        progress_callback: ProgressFnT | None = None,
        meta: Mapping[str, Any] | None = None,
        on_log: LogForward | None = None,
        capabilities: Mapping[str, Any] | None = None,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        task: types.TaskMetadata | None = None,
        ask: AskClient | None = None,
    ) -> CallAnswer:
        """`meta`: the client's request `_meta` (what of it passes on: `passed_on_meta`);
        `on_log`: where this call's log messages go (its client), None for nowhere;
        `capabilities`: what the calling client declared that a 2026-07-28 server is told
        (`envelope.relayed`); `input_responses` and `request_state`: a 2026-07-28 retry's,
        the server's own state; `task`: the client's, unchanged; `ask`: how its client is
        asked a server's question during the call (a server spoken to in 2025-11-25 asks by
        a request: `server_questions`). The answer may be the server's input-required
        result."""
        # Only the fields a call has: each one given is validated, and dumped.
        extra: dict[str, Any] = {}
        if meta:
            extra["_meta"] = passed_on_meta(meta)
        if task is not None:
            extra["task"] = task
        if input_responses is not None:
            extra["input_responses"] = input_responses
        if request_state is not None:
            extra["request_state"] = request_state
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name=name, arguments=arguments, **extra)
        )
        try:
            # send_request, not call_tool: the result is passed on as it came, without
            # validating it against the tool's outputSchema here (the client may).
            result = await self._relayed(
                request,
                _CALL_ANSWER,
                name,
                progress_callback=progress_callback,
                on_log=on_log,
                capabilities=capabilities,
                ask=ask,
            )
        except MCPError as exc:
            # The server's own JSON-RPC error: the tool's answer, passed on unchanged.
            raise failures.DownstreamFailure(exc.message, error=exc.error) from None
        self.health.succeeded()
        if isinstance(result, types.InputRequiredResult):
            return result
        size = result_size(result)
        if size > self.max_result_bytes:
            raise failures.DownstreamFailure(
                f"the result is too large ({size} bytes; the limit is {self.max_result_bytes})"
            )
        return result

    async def _relayed(
        self,
        request: Any,
        result_type: type[ResultT] | TypeAdapter[Any],
        name: str,
        *,
        progress_callback: ProgressFnT | None,
        on_log: LogForward | None,
        capabilities: Mapping[str, Any] | None,
        ask: AskClient | None,
    ) -> Any:
        """One request to the server with what passes through besides its result, for a
        tool call and any other request alike: progress, its client's log messages, what
        its client declared (`calling_capabilities`) and how it is asked a server's
        question, a downstream span, cancellation, the server's timeout. `name`: what the
        request names (a tool, a prompt; "" for none), for its span and its failures'
        detail. The server's own JSON-RPC error is raised as it came (MCPError); a
        failure of the gateway's (closed, timed out, invalid) as a DownstreamFailure."""
        # The pool hands each caller the server's newest settings: an admin may have
        # changed the timeout since this connection was made.
        timeout = self.server.timeout
        session = self._session
        if session is None:
            raise failures.DownstreamFailure("the server connection is closed")
        method = getattr(request, "method", "request")
        self.in_flight += 1
        self.last_used = time.monotonic()
        token = current_redactor.set(self._redact)
        self._call_ids += 1
        call_id = self._call_ids
        logs = received = None
        if on_log is not None:
            logs, received = anyio.create_memory_object_stream[
                types.LoggingMessageNotificationParams
            ](CALL_LOG_QUEUE)
        self._calls[call_id] = logs
        self._asking[call_id] = (capabilities, ask)
        try:
            # The gateway's own deadline, not the SDK's read timeout: the SDK reports its
            # timeout as an MCPError of code -32001, which a server may send as its own
            # error too. What happened decides: this scope's deadline passed, or not.
            # On cancellation the SDK sends the server `notifications/cancelled`.
            with (
                anyio.move_on_after(timeout) as deadline,
                tracing.downstream_span(self.ref, name, self.recorder.tracing, method) as span,
            ):
                with calling_capabilities(capabilities):
                    sent = session.send_request(
                        request, result_type, progress_callback=progress_callback
                    )
                    if logs is None or received is None or on_log is None:
                        result = await sent
                    else:
                        result = await _with_logs(sent, logs, received, on_log)
                if isinstance(result, types.CallToolResult):
                    span.finished(result)
            if deadline.cancelled_caught:
                raise self._call_failure(
                    f"timed out after {timeout:g}s",
                    f"{_what(method, name)}: no answer within {timeout:g}s",
                    timed_out=True,
                )
            if self._relisting is not None or self._sibling_listings:  # the answer is in:
                await self._listed_if_changed()  # outside the call's deadline
        except MCPError as exc:
            # CONNECTION_CLOSED (-32000) is also a code a server may send: closed means the
            # stream really ended.
            if exc.code == CONNECTION_CLOSED and self._stream_ended:
                raise self._broken() from None
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise self._broken() from None
        except failures.DownstreamFailure:
            raise
        except Exception as exc:  # e.g. a result that is not a CallToolResult
            raise self._call_failure(
                "the server sent an invalid result", f"{_what(method, name)}: {exc!r}"
            ) from None
        finally:
            del self._calls[call_id]
            del self._asking[call_id]
            if logs is not None:
                logs.close()
            current_redactor.reset(token)
            self.in_flight -= 1
            self.last_used = time.monotonic()
        return _own_meta_in_place(result)  # parsed here, held by nothing else

    def _call_failure(
        self, phrase: str, detail: str, *, timed_out: bool = False
    ) -> failures.DownstreamFailure:
        """A failure the gateway describes: the phrase for the client, the rest logged."""
        tail = self._stderr.tail if self._stderr else ()
        incident = failures.report(
            self.label, phrase, detail, stderr_tail=tail, redact=self._redact
        )
        return failures.DownstreamFailure(phrase, timed_out=timed_out, incident=incident.id)

    def _broken(self) -> failures.DownstreamFailure:
        """The server died under us: stop (the pool replaces it) and count the failure."""
        if not self._stop.is_set():
            self.stop()
            self.health.failed("the server connection closed")
            self.recorder.downstream_crashed(self.ref)
        return self._call_failure("the server connection closed", "the server's stream ended")

    # The toolbox endpoint (`metatools.toolbox_members`): what the server declared at its
    # initialize, and a request other than tools/call (resources, prompts, completions).

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        session = self._session
        return session.server_capabilities if session is not None else None

    @property
    def askable_in_flight(self) -> bool:
        """Whether a call in flight could be asked a question by the server (its client
        declared a capability to answer): `metatools.lone_calls` keeps such a call alone."""
        return any(ask is not None for _, ask in self._asking.values())

    @property
    def modern(self) -> bool:
        """Spoken to in 2026-07-28 (it asks for input by an input-required result)."""
        session = self._session
        return session is not None and session.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def instructions(self) -> str | None:
        session = self._session
        return session.instructions if session is not None else None

    async def request(
        self,
        request: Any,
        result_type: type[ResultT] | TypeAdapter[Any],
        *,
        name: str = "",
        meta: Mapping[str, Any] | None = None,
        progress_callback: ProgressFnT | None = None,
        on_log: LogForward | None = None,
        capabilities: Mapping[str, Any] | None = None,
        ask: AskClient | None = None,
    ) -> Any:
        """A request other than tools/call (the toolbox endpoint's resources, prompts and
        completions), relayed as a tool call is: `name`, `meta`, `progress_callback`,
        `on_log`, `capabilities` and `ask` as `call_tool`'s (the request's own `_meta`
        is replaced by what of `meta` passes on). The server's own JSON-RPC error is
        raised as it came (MCPError, the answer to pass on); a failure of the gateway's
        (closed, timed out, invalid) as a DownstreamFailure. A 2026-07-28 server's
        input-required result is returned when `result_type` allows it."""
        params = getattr(request, "params", None)
        if params is not None:
            own = params.model_copy(update={"meta": passed_on_meta(meta)})
            request = request.model_copy(update={"params": own})
        return await self._relayed(
            request,
            result_type,
            name,
            progress_callback=progress_callback,
            on_log=on_log,
            capabilities=capabilities,
            ask=ask,
        )


def _what(method: str, name: str) -> str:
    """A request as a failure's log line names it: `tools/call echo`, `resources/read`."""
    return f"{method} {name}" if name else method


async def _with_logs(
    call: Awaitable[Any],
    logs: MemoryObjectSendStream[types.LoggingMessageNotificationParams],
    received: MemoryObjectReceiveStream[types.LoggingMessageNotificationParams],
    on_log: LogForward,
) -> Any:
    """The call's result, once every log message the server sent before it is forwarded
    (they were read before the result: the stream is read in order)."""

    async def forward() -> None:
        async with received:
            async for params in received:
                try:
                    await on_log(params)
                except Exception:  # the client went away: its call ends as it would
                    logger.debug("a log message could not be forwarded", exc_info=True)

    result: Any = None
    failure: Exception | None = None
    async with anyio.create_task_group() as forwarding:
        forwarding.start_soon(forward)
        try:
            result = await call
        except Exception as exc:  # raised after the forwarder is done, not as a group
            failure = exc
        finally:
            logs.close()
    if failure is not None:
        raise failure
    assert result is not None
    return result
