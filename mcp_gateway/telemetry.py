"""What the gateway records, out through one seam: Prometheus metrics, OpenTelemetry spans
and the call log (`calllog`). Called where a meta-tool finishes (`metatools`), where a
downstream connection starts, dies or is killed (`connection`, `stdio`), where a request
is refused (`http`), and around each MCP request (`request_middleware`).

Label values come from configuration only (tenant slug, toolbox, server, a tool the
downstream listed, the spec's error codes): never from client input, so the series stay
bounded. Spans exist only when a tracer provider is configured (`configure_tracing`); the
hot path checks one boolean otherwise.
"""

from __future__ import annotations

import atexit
import logging
import os
import time
from collections import OrderedDict
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator

    import mcp_types as types
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

    from mcp_gateway.auth import Caller
    from mcp_gateway.calllog import CallLog
    from mcp_gateway.errors import GatewayError
    from mcp_gateway.failures import Redactor

logger = logging.getLogger("workbench.telemetry")

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
OK = "ok"
TOOL_ERROR = "tool_error"
CANCELLED = "cancelled"
# Outcomes past the point where the downstream's own tool list named the tool.
_TOOL_KNOWN = frozenset({OK, TOOL_ERROR, "TIMEOUT", "DOWNSTREAM_ERROR", CANCELLED})
# Seconds: a meta-tool answers in milliseconds when warm, a cold open in seconds.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
CLIENT_INFO_ENTRIES = 4096  # sessions whose client name this process remembers
CALL_LABELS = ("tenant", "toolbox", "server", "tool")
# Where `http` puts the Mcp-Session-Id it gives an `initialize` (ASGI scope state).
NEW_SESSION_STATE = "workbench_new_session_id"


# Metrics


class Metrics:
    """Every metric the gateway exports; made once per process (see `metrics`)."""

    def __init__(self) -> None:
        self.calls = Counter(
            "workbench_tool_calls",
            "use_tool calls by outcome: ok, tool_error (the downstream's isError), an error code",
            [*CALL_LABELS, "outcome"],
            registry=None,
        )
        self.call_seconds = Histogram(
            "workbench_tool_call_duration_seconds",
            "use_tool duration, from the request to its result",
            CALL_LABELS,
            buckets=DURATION_BUCKETS,
            registry=None,
        )
        self.opens = Counter(
            "workbench_open_toolbox",
            "open_toolbox calls by outcome (ok or an error code)",
            ["tenant", "toolbox", "outcome"],
            registry=None,
        )
        self.open_seconds = Histogram(
            "workbench_open_toolbox_duration_seconds",
            "open_toolbox duration",
            ["tenant", "toolbox"],
            buckets=DURATION_BUCKETS,
            registry=None,
        )
        server_labels = ["tenant", "toolbox", "server"]
        self.live = Gauge(
            "workbench_downstream_connections",
            "Live downstream connections (all gateway processes)",
            server_labels,
            multiprocess_mode="livesum",
            registry=None,
        )
        self.starts = Counter(
            "workbench_downstream_starts",
            "Downstream connections made (a process started, a remote session opened)",
            server_labels,
            registry=None,
        )
        self.start_failures = Counter(
            "workbench_downstream_start_failures",
            "Downstream connections that failed to start",
            server_labels,
            registry=None,
        )
        self.crashes = Counter(
            "workbench_downstream_crashes",
            "Live downstream connections that ended without the gateway closing them",
            server_labels,
            registry=None,
        )
        self.limit_kills = Counter(
            "workbench_downstream_limit_kills",
            "Sandboxed servers stopped by one of their limits (CPU time, memory...)",
            server_labels,
            registry=None,
        )
        self.auth_refusals = Counter(
            "workbench_auth_refusals",
            "Requests refused before the gateway knew the caller, by reason",
            ["reason"],
            registry=None,
        )
        self.rate_limited = Counter(
            "workbench_rate_limited",
            "Requests refused by a rate limit: use_tool, open_toolbox or in_flight",
            ["tenant", "limit"],
            registry=None,
        )
        self.call_log_dropped = Counter(
            "workbench_call_log_dropped",
            "Call log records dropped: the queue was full (the database is slow or down)",
            registry=None,
        )
        self.call_log_failed = Counter(
            "workbench_call_log_write_failures",
            "Call log records lost because their batch could not be written",
            registry=None,
        )
        self.call_log_written = Counter(
            "workbench_call_log_written", "Call log records written", registry=None
        )
        self.all = [
            self.calls,
            self.call_seconds,
            self.opens,
            self.open_seconds,
            self.live,
            self.starts,
            self.start_failures,
            self.crashes,
            self.limit_kills,
            self.auth_refusals,
            self.rate_limited,
            self.call_log_dropped,
            self.call_log_failed,
            self.call_log_written,
        ]


_metrics: Metrics | None = None
_multiprocess_dir: str | None = None


def configure_metrics(directory: str | None) -> None:
    """Multiprocess mode (each worker writes its own files in `directory`; a scrape adds
    them up) when a directory is given. Call before the first metric is made.

    Files of processes no longer running are removed first: counters of workers from an
    earlier start, and the live gauges of a worker that died, must not be added in.
    """
    global _multiprocess_dir
    if _metrics is not None or not directory:
        return
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        pid = stale.stem.rsplit("_", 1)[-1]
        if pid.isdigit() and not _running(int(pid)):
            stale.unlink(missing_ok=True)
    os.environ[MULTIPROC_ENV] = str(path)
    values.ValueClass = values.MultiProcessValue()
    _multiprocess_dir = str(path)
    atexit.register(_process_exiting)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def metrics() -> Metrics:
    global _metrics
    if _metrics is None:
        _metrics = Metrics()
    return _metrics


def exposition() -> bytes:
    """The text a scrape gets: every process's metrics when in multiprocess mode."""
    registry = CollectorRegistry()
    if _multiprocess_dir:
        multiprocess.MultiProcessCollector(registry, path=_multiprocess_dir)
    else:
        for metric in metrics().all:
            registry.register(metric)
    return generate_latest(registry)


def _process_exiting() -> None:
    """This worker's live gauges stop counting (its connections are gone)."""
    if _multiprocess_dir:
        multiprocess.mark_process_dead(os.getpid(), _multiprocess_dir)


# Downstream connections (label: "tenant/toolbox/server", as the pool names them)


def _server_labels(label: str) -> tuple[str, str, str]:
    parts = [*label.split("/", 2), "", "", ""]
    return parts[0], parts[1], parts[2]


def downstream_started(label: str) -> None:
    m = metrics()
    m.starts.labels(*_server_labels(label)).inc()
    m.live.labels(*_server_labels(label)).inc()


def downstream_failed_to_start(label: str) -> None:
    metrics().start_failures.labels(*_server_labels(label)).inc()


def downstream_ended(label: str) -> None:
    metrics().live.labels(*_server_labels(label)).dec()


def downstream_crashed(label: str) -> None:
    """A live connection ended without the gateway closing it (exit, crash, dropped)."""
    metrics().crashes.labels(*_server_labels(label)).inc()


# The label of the connection whose task is running (set by its owner task), so that the
# transport underneath can count a limit kill without knowing whose process it is.
current_server: ContextVar[str] = ContextVar("workbench_server_label", default="")


def downstream_limit_kill() -> None:
    metrics().limit_kills.labels(*_server_labels(current_server.get())).inc()


def auth_refused(reason: str) -> None:
    metrics().auth_refusals.labels(reason).inc()


def in_flight_refused(tenant: str) -> None:
    metrics().rate_limited.labels(tenant, "in_flight").inc()


# Tracing


_tracing = False


class _NoSpan:
    """What the SDK's outbound-request span is when nothing records spans: nothing."""

    __slots__ = ()

    def __enter__(self) -> Any:
        from opentelemetry.trace import INVALID_SPAN

        return INVALID_SPAN

    def __exit__(self, *exc: object) -> bool:
        return False


_NO_SPAN = _NoSpan()


def _no_span(*args: Any, **kwargs: Any) -> _NoSpan:
    return _NO_SPAN


def _no_trace_context(meta: dict[str, Any]) -> None:
    pass  # no span is current: there is no context to pass on


def _sdk_spans(on: bool) -> None:
    """The SDK opens a span (and injects its context) around every request it sends, the
    gateway's downstream calls included, whether or not anything records it. Without a
    tracer provider, a span and a propagation per call that nobody sees: left out.
    (SDK internals, pinned by tests/gateway/test_sdk_pins.py.)"""
    from mcp.shared import _otel, jsonrpc_dispatcher

    jsonrpc_dispatcher.otel_span = _otel.otel_span if on else _no_span  # type: ignore[assignment]
    jsonrpc_dispatcher.inject_trace_context = (  # type: ignore[assignment]
        _otel.inject_trace_context if on else _no_trace_context
    )


def configure_tracing() -> bool:
    """Spans exported over OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_* variables name
    an endpoint; otherwise none at all. A tracer provider already set (a test's in-memory
    exporter) is used as it is."""
    global _tracing
    from opentelemetry import trace

    current = trace.get_tracer_provider()
    if type(current).__module__.startswith("opentelemetry.sdk"):
        _tracing = True
        _sdk_spans(True)
        return True
    if not (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        _tracing = False
        _sdk_spans(False)
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "workbench")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _tracing = True
    _sdk_spans(True)
    return True


def tracing() -> bool:
    return _tracing


@contextmanager
def downstream_span(label: str, tool: str) -> Iterator[None]:
    """One span per downstream tools/call; the SDK's own client span nests inside it and
    passes its context on in `params._meta.traceparent`."""
    if not _tracing:
        yield
        return
    from opentelemetry import trace

    tenant, toolbox, server = _server_labels(label)
    tracer = trace.get_tracer("workbench.gateway")
    with tracer.start_as_current_span(
        f"tools/call {tool}",
        kind=trace.SpanKind.CLIENT,
        attributes={
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "workbench.tenant": tenant,
            "workbench.toolbox": toolbox,
            "workbench.server": server,
        },
    ) as span:
        yield
        result = _downstream_result.get()
        if result is not None and result.is_error:
            span.set_attribute("error.type", TOOL_ERROR)
            span.set_status(trace.StatusCode.ERROR)


_downstream_result: ContextVar[types.CallToolResult | None] = ContextVar(
    "workbench_downstream_result", default=None
)


def downstream_result(result: types.CallToolResult) -> None:
    if _tracing:
        _downstream_result.set(result)


# The request being served


@dataclass(slots=True)
class RequestInfo:
    session_id: str | None = None
    client_name: str = ""
    client_version: str = ""
    request_id: str = ""
    tenant: str = ""


def current_request() -> RequestInfo | None:
    """The MCP request this task serves, if any (for the JSON log lines)."""
    return _request.get()


_request: ContextVar[RequestInfo | None] = ContextVar("workbench_request", default=None)
_gateway_error: ContextVar[tuple[types.CallToolResult, GatewayError] | None] = ContextVar(
    "workbench_gateway_error", default=None
)


def gateway_error(result: types.CallToolResult, error: GatewayError) -> None:
    """Tells the seam that this result is the gateway's own error (not the downstream's)."""
    _gateway_error.set((result, error))


_payload_redactors: ContextVar[tuple[Redactor, ...]] = ContextVar(
    "workbench_payload_redactors", default=()
)


def served_by(redactors: Iterable[Redactor]) -> None:
    """Tells the seam which connections' redactors clean this call's captured payload."""
    _payload_redactors.set(tuple(redactors))


class ClientNames:
    """Client name and version per 2025-11-25 session: sent once, in `initialize`; later
    requests (served statelessly, maybe by another process) carry only the session id.
    Kept in the shared store, with a small per-process copy."""

    def __init__(self, store: Any, idle_seconds: float) -> None:
        self.store = store
        self.idle_seconds = idle_seconds
        self._local: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def _remember(self, session_id: str, info: tuple[str, str]) -> None:
        self._local[session_id] = info
        self._local.move_to_end(session_id)
        while len(self._local) > CLIENT_INFO_ENTRIES:
            self._local.popitem(last=False)

    async def save(self, session_id: str, info: tuple[str, str]) -> None:
        self._remember(session_id, info)
        try:
            await self.store.set(f"wb:client:{session_id}", info, self.idle_seconds)
        except Exception:  # bookkeeping: never fails the request
            logger.exception("Could not record the client of session %s", session_id)

    async def find(self, session_id: str) -> tuple[str, str]:
        info = self._local.get(session_id)
        if info is None:
            try:
                found = await self.store.get(f"wb:client:{session_id}")
            except Exception:
                found = None
            info = tuple(found) if found else ("", "")  # type: ignore[assignment]
            self._remember(session_id, info)  # type: ignore[arg-type]
        return info  # type: ignore[return-value]


def _client_of(ctx: ServerRequestContext[Any, Any]) -> tuple[str, str] | None:
    """The client named in this request: `initialize`'s or `server/discover`'s params, or
    a 2026-07-28 request's envelope."""
    params = ctx.params or {}
    info = params.get("clientInfo") if isinstance(params, dict) else None
    if not isinstance(info, dict):
        client_params = getattr(ctx.session, "client_params", None)
        if client_params is not None:
            return client_params.client_info.name[:200], (client_params.client_info.version or "")[
                :100
            ]
        from mcp_types import CLIENT_INFO_META_KEY  # loaded by then: the gateway runs

        meta = ctx.meta or {}
        info = meta.get(CLIENT_INFO_META_KEY) if isinstance(meta, dict) else None
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        version = info.get("version")
        return info["name"][:200], (version if isinstance(version, str) else "")[:100]
    return None


# The seam itself


@dataclass
class Telemetry:
    """Metrics for every call; the call log when one is given; spans when tracing is on."""

    call_log: CallLog | None = None
    client_names: ClientNames | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Telemetry]:
        """The call log's writer runs for as long as the gateway does."""
        if self.call_log is None:
            yield self
            return
        async with self.call_log.running():
            yield self

    def middlewares(self, session_state: str, caller_state: str) -> list[Any]:
        """Context-tier middleware for the SDK `Server`: names the request (session,
        client) for the call log, and, when tracing, the SDK's own span per request with
        the gateway's attributes added."""
        client_names = self.client_names

        async def name_request(
            ctx: ServerRequestContext[Any, Any], call_next: CallNext
        ) -> HandlerResult:
            state = ctx.request.scope.get("state", {}) if ctx.request is not None else {}
            session_id = state.get(session_state)
            client = _client_of(ctx)
            if client is None and session_id and client_names is not None:
                client = await client_names.find(session_id)
            elif client is not None and ctx.method == "initialize" and client_names is not None:
                new_session = state.get(NEW_SESSION_STATE)
                if new_session:
                    await client_names.save(new_session, client)
            caller = state.get(caller_state)
            info = RequestInfo(
                session_id,
                *(client or ("", "")),
                str(ctx.request_id or ""),
                caller.tenant.slug if caller is not None else "",
            )
            token = _request.set(info)
            if _tracing:
                _annotate_span(info, caller)
            try:
                return await call_next(ctx)
            finally:
                _request.reset(token)

        if not _tracing:
            return [name_request]
        from mcp.server._otel import OpenTelemetryMiddleware

        return [OpenTelemetryMiddleware(), name_request]

    # The two places on the call path

    def open_toolbox(
        self, caller: Caller, arguments: Any, result: types.CallToolResult, started: float
    ) -> None:
        elapsed = time.perf_counter() - started
        outcome, error = self._outcome(result)
        name = arguments.get("toolbox") if isinstance(arguments, dict) else None
        toolbox = caller.tenant.toolbox(name) if isinstance(name, str) else None
        label = toolbox.name if toolbox is not None else ""
        m = metrics()
        m.opens.labels(caller.tenant.slug, label, outcome).inc()
        m.open_seconds.labels(caller.tenant.slug, label).observe(elapsed)
        if outcome == "RATE_LIMITED":
            m.rate_limited.labels(caller.tenant.slug, "open_toolbox").inc()
        if self.call_log is not None:
            self._log(
                "open_toolbox",
                caller,
                arguments,
                result,
                elapsed,
                outcome,
                error,
                toolbox=name if isinstance(name, str) else "",
            )

    def use_tool(
        self, caller: Caller, arguments: Any, result: types.CallToolResult | None, started: float
    ) -> None:
        """`result` None: the client cancelled the call."""
        elapsed = time.perf_counter() - started
        outcome, error = (CANCELLED, None) if result is None else self._outcome(result)
        ref = arguments.get("tool") if isinstance(arguments, dict) else None
        ref = ref if isinstance(ref, dict) else {}
        names = [ref.get(part) for part in ("toolbox", "server", "name")]
        names = [value if isinstance(value, str) else "" for value in names]
        toolbox = caller.tenant.toolbox(names[0]) if names[0] else None
        server = toolbox.server(names[1]) if toolbox is not None and names[1] else None
        labels = (
            caller.tenant.slug,
            toolbox.name if toolbox is not None else "",
            server.name if server is not None else "",
            names[2] if server is not None and outcome in _TOOL_KNOWN else "",
        )
        m = metrics()
        m.calls.labels(*labels, outcome).inc()
        m.call_seconds.labels(*labels).observe(elapsed)
        if outcome == "RATE_LIMITED":
            m.rate_limited.labels(caller.tenant.slug, "use_tool").inc()
        if self.call_log is not None:
            self._log(
                "use_tool",
                caller,
                arguments,
                result,
                elapsed,
                outcome,
                error,
                toolbox=names[0],
                server=names[1],
                tool=names[2],
            )
        if _tracing:
            _annotate_outcome(labels, outcome)

    @staticmethod
    def _outcome(result: types.CallToolResult) -> tuple[str, GatewayError | None]:
        mark = _gateway_error.get()
        if mark is not None and mark[0] is result:
            return mark[1].code.value, mark[1]
        return (TOOL_ERROR if result.is_error else OK), None

    def _log(
        self,
        meta_tool: str,
        caller: Caller,
        arguments: Any,
        result: types.CallToolResult | None,
        elapsed: float,
        outcome: str,
        error: GatewayError | None,
        **names: str,
    ) -> None:
        from mcp_gateway.calllog import CallEntry

        assert self.call_log is not None
        request = _request.get() or RequestInfo()
        self.call_log.put(
            CallEntry(
                at=time.time(),
                tenant_id=caller.tenant.tenant_id,
                key_id=caller.key.key_id,
                key_prefix=caller.key.prefix,
                client_name=request.client_name,
                client_version=request.client_version,
                session_id=request.session_id or "",
                meta_tool=meta_tool,
                duration_ms=elapsed * 1000,
                outcome=outcome,
                error_code=error.code.value if error is not None else "",
                incident=str(error.details.get("incident", "")) if error is not None else "",
                arguments=arguments,
                result=result,
                redactors=_payload_redactors.get(),
                **names,
            )
        )
        _payload_redactors.set(())


def _annotate_span(info: RequestInfo, caller: Any) -> None:
    from opentelemetry import trace

    span = trace.get_current_span()
    attributes: dict[str, Any] = {"network.transport": "tcp", "network.protocol.name": "http"}
    if info.session_id:
        attributes["mcp.session.id"] = info.session_id
    if caller is not None:
        attributes["workbench.tenant"] = caller.tenant.slug
    span.set_attributes(attributes)


def _annotate_outcome(labels: tuple[str, str, str, str], outcome: str) -> None:
    """The request span learns what the configuration knows of the call, and its outcome."""
    from opentelemetry import trace

    span = trace.get_current_span()
    _, toolbox, server, tool = labels
    attributes: dict[str, Any] = {"workbench.outcome": outcome}
    if toolbox:
        attributes["workbench.toolbox"] = toolbox
    if server:
        attributes["workbench.server"] = server
    if tool:
        attributes["workbench.tool"] = tool
    span.set_attributes(attributes)
