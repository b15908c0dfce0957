"""OpenTelemetry spans: exported only when a tracer provider is configured
(`configure_tracing`, whose answer the assembly hands to the recorder); the hot path checks
that one boolean otherwise."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from mcp_gateway.observe.request_context import RequestInfo
from mcp_gateway.observe.sdk_patch import sdk_spans
from mcp_gateway.snapshots.servers import ServerRef

if TYPE_CHECKING:
    import mcp_types as types

TOOL_ERROR = "tool_error"


def configure_tracing() -> bool:
    """Whether spans are exported: over OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_*
    variables name an endpoint; otherwise none at all. A tracer provider already set (a
    test's in-memory exporter, or an earlier call's) is used as it is."""
    current = trace.get_tracer_provider()
    if type(current).__module__.startswith("opentelemetry.sdk"):
        sdk_spans(True)
        return True
    if not (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        sdk_spans(False)
        return False
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "workbench")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    sdk_spans(True)
    return True


class DownstreamSpan:
    """The span of one downstream call, told its result when there is one."""

    __slots__ = ("result",)

    def __init__(self) -> None:
        self.result: types.CallToolResult | None = None

    def finished(self, result: types.CallToolResult) -> None:
        self.result = result


@contextmanager
def downstream_span(
    server_ref: ServerRef, name: str, on: bool, method: str = "tools/call"
) -> Iterator[DownstreamSpan]:
    """One span per downstream request (when `on`: spans are exported), named for its
    method and what it names (a tool, a prompt; a resource's URI is not a name: a read's
    span is its method's alone); the SDK's own client span nests inside it and passes its
    context on in `params._meta.traceparent`."""
    call = DownstreamSpan()
    if not on:
        yield call
        return
    tenant, toolbox, server = server_ref
    attributes: dict[str, Any] = {"mcp.method.name": method}
    if method == "tools/call":
        attributes |= {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    elif method == "prompts/get":
        attributes["gen_ai.prompt.name"] = name
    attributes |= {
        "workbench.tenant": tenant,
        "workbench.toolbox": toolbox,
        "workbench.server": server,
    }
    tracer = trace.get_tracer("workbench.gateway")
    with tracer.start_as_current_span(
        f"{method} {name}" if name else method, kind=trace.SpanKind.CLIENT, attributes=attributes
    ) as span:
        yield call
        result = call.result
        if result is not None and result.is_error:
            span.set_attribute("error.type", TOOL_ERROR)
            span.set_status(trace.StatusCode.ERROR)


def annotate_request(info: RequestInfo, tenant: str) -> None:
    span = trace.get_current_span()
    attributes: dict[str, Any] = {"network.transport": "tcp", "network.protocol.name": "http"}
    if info.session_id:
        attributes["mcp.session.id"] = info.session_id
    if tenant:
        attributes["workbench.tenant"] = tenant
    span.set_attributes(attributes)


def annotate_outcome(
    labels: tuple[str, str, str, str], outcome: str, signed_in_as: str = ""
) -> None:
    """The request span learns what the configuration knows of the call, its outcome, and
    whose connected account it used (`recorder.signed_in_as`)."""
    span = trace.get_current_span()
    _, toolbox, server, tool = labels
    attributes: dict[str, Any] = {"workbench.outcome": outcome}
    if signed_in_as:
        attributes["workbench.signed_in_as"] = signed_in_as
    if toolbox:
        attributes["workbench.toolbox"] = toolbox
    if server:
        attributes["workbench.server"] = server
    if tool:
        attributes["workbench.tool"] = tool
    span.set_attributes(attributes)
