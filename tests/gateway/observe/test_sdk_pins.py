"""Pins of the SDK internals `mcp_gateway/downstream/stdio.py` is built from (private helpers of
`mcp.client.stdio`): an SDK upgrade that moves or reshapes one fails here, by name,
instead of somewhere deep in a downstream connection."""

from __future__ import annotations

import inspect

import pytest
from mcp.client import stdio as sdk_stdio

# name -> (parameters in order, each with its kind and whether it has a default; is async)
PINNED = {
    "_create_platform_compatible_process": (
        [
            ("command", "POSITIONAL_OR_KEYWORD", False),
            ("args", "POSITIONAL_OR_KEYWORD", False),
            ("env", "POSITIONAL_OR_KEYWORD", True),
            ("errlog", "POSITIONAL_OR_KEYWORD", True),
            ("cwd", "POSITIONAL_OR_KEYWORD", True),
        ],
        True,
    ),
    "_parse_line": ([("line", "POSITIONAL_OR_KEYWORD", False)], False),
    "_drain_stdout": ([("process", "POSITIONAL_OR_KEYWORD", False)], True),
    "_stop_server_process": ([("process", "POSITIONAL_OR_KEYWORD", False)], True),
    "_aclose_all": ([("streams", "VAR_POSITIONAL", False)], True),
    "get_default_environment": ([], False),
}


def shape(function: object) -> tuple[list[tuple[str, str, bool]], bool]:
    parameters = [
        (p.name, p.kind.name, p.default is not inspect.Parameter.empty)
        for p in inspect.signature(function).parameters.values()
    ]
    return parameters, inspect.iscoroutinefunction(function)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_sdk_stdio_helper_is_unchanged(name):
    helper = getattr(sdk_stdio, name, None)
    assert helper is not None, (
        f"mcp.client.stdio.{name} is gone: downstream/stdio.py uses it (see its docstring)"
    )
    assert shape(helper) == PINNED[name], (
        f"mcp.client.stdio.{name} changed its signature to {inspect.signature(helper)}: "
        "check mcp_gateway/downstream/stdio.py's use of it and its list of differences from the SDK"
    )


def test_the_parsed_line_is_still_a_session_message():
    message = sdk_stdio._parse_line('{"jsonrpc": "2.0", "id": 1, "result": {}}')
    assert type(message).__name__ == "SessionMessage", (
        "mcp.client.stdio._parse_line no longer returns a SessionMessage for a valid line"
    )
    assert isinstance(sdk_stdio._parse_line("not json"), Exception), (
        "mcp.client.stdio._parse_line no longer returns a parse error as a value"
    )


def test_the_default_environment_is_still_a_small_allowlist():
    assert set(sdk_stdio.get_default_environment()) <= {
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
    }, "mcp.client.stdio.get_default_environment passes more than its POSIX allowlist"


# Issue 15 (performance): what mcp_gateway/front/http.py, observe/ and
# workbench_site/http_protocol.py take from the SDK's and uvicorn's insides.


def test_the_dispatcher_still_looks_up_its_span_helpers_by_module_name():
    """observe.sdk_patch.sdk_spans swaps these module globals for no-ops when nothing records
    spans; that only works while send_request calls them through the module."""
    from mcp.shared import _otel, jsonrpc_dispatcher

    source = inspect.getsource(jsonrpc_dispatcher.JSONRPCDispatcher.send_raw_request)
    for name in ("otel_span", "inject_trace_context"):
        assert hasattr(jsonrpc_dispatcher, name) and hasattr(_otel, name), (
            f"mcp.shared.jsonrpc_dispatcher.{name} is gone: see observe.sdk_patch.sdk_spans"
        )
        assert f"{name}(" in source, (
            f"JSONRPCDispatcher.send_raw_request no longer calls {name}: see observe.sdk_patch"
        )


def test_the_sdk_spans_are_off_without_a_tracer_and_back_with_one():
    from mcp.shared import _otel, jsonrpc_dispatcher

    from mcp_gateway.observe import sdk_patch

    was_on = jsonrpc_dispatcher.otel_span is _otel.otel_span
    try:
        sdk_patch.sdk_spans(False)
        assert jsonrpc_dispatcher.otel_span is sdk_patch.no_span
        with jsonrpc_dispatcher.otel_span("x", kind=None) as span:
            span.set_attributes({"a": "b"})  # what send_request does with it
            span.set_status(None)
    finally:
        sdk_patch.sdk_spans(was_on)
    sdk_patch.sdk_spans(True)
    assert jsonrpc_dispatcher.otel_span is _otel.otel_span
    assert jsonrpc_dispatcher.inject_trace_context is _otel.inject_trace_context
    sdk_patch.sdk_spans(was_on)


def test_the_session_manager_still_offers_json_answers_and_the_accept_check():
    from mcp.server.streamable_http import check_accept_headers
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    parameters = inspect.signature(StreamableHTTPSessionManager).parameters
    for name in ("json_response", "stateless", "security_settings", "max_request_body_size"):
        assert name in parameters, (
            f"StreamableHTTPSessionManager lost its {name!r} argument: see front/http.py"
        )
    assert list(inspect.signature(check_accept_headers).parameters) == ["request"], (
        "mcp.server.streamable_http.check_accept_headers changed: see http._answers_as_json"
    )


def test_uvicorns_httptools_protocol_still_has_what_the_bounded_one_overrides():
    from uvicorn.config import Config
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    for name in ("data_received", "on_headers_complete", "on_message_complete"):
        assert callable(getattr(HttpToolsProtocol, name, None)), (
            f"uvicorn's HttpToolsProtocol.{name} is gone: see workbench_site/http_protocol.py"
        )
    assert "msg" in inspect.signature(HttpToolsProtocol.send_400_response).parameters
    assert "h11_max_incomplete_event_size" in inspect.signature(Config).parameters


def test_the_sdks_otel_middleware_is_still_what_telemetry_brings_back():
    """front.request_naming.request_middlewares imports mcp.server._otel.OpenTelemetryMiddleware (a
    private module) when spans are exported, in place of the SDK's default middleware that
    mcp_gateway/front/server.py replaces: it must still be there, still be that default, take no
    arguments, and still wrap each request in the current span that observe.tracing.annotate_request
    adds the gateway's attributes to."""
    from mcp.server import _otel as server_otel
    from mcp.server.context import ServerMiddleware
    from mcp.server.lowlevel import Server

    middleware = getattr(server_otel, "OpenTelemetryMiddleware", None)
    assert middleware is not None, (
        "mcp.server._otel.OpenTelemetryMiddleware is gone: see front.request_naming"
    )
    assert ServerMiddleware in middleware.__mro__, (
        "mcp.server._otel.OpenTelemetryMiddleware is no longer a ServerMiddleware: "
        "see front.request_naming.request_middlewares"
    )
    assert [type(m) for m in Server("pin").middleware] == [middleware], (
        "the SDK Server's default middleware is no longer OpenTelemetryMiddleware alone: "
        "see front/server.py, which replaces it, and front.request_naming"
    )
    assert shape(middleware) == ([], False), (
        f"OpenTelemetryMiddleware() changed its signature to {inspect.signature(middleware)}: "
        "see front.request_naming.request_middlewares"
    )
    assert shape(middleware.__call__) == (
        [
            ("self", "POSITIONAL_OR_KEYWORD", False),
            ("ctx", "POSITIONAL_OR_KEYWORD", False),
            ("call_next", "POSITIONAL_OR_KEYWORD", False),
        ],
        True,
    ), f"OpenTelemetryMiddleware.__call__ is now {inspect.signature(middleware.__call__)}"
    source = inspect.getsource(middleware.__call__)
    assert "otel_span(" in source and "SpanKind.SERVER" in source, (
        "OpenTelemetryMiddleware no longer opens a server span around the request: "
        "observe.tracing.annotate_request would annotate no span of its own"
    )
    from mcp.shared._otel import otel_span

    assert "start_as_current_span(" in inspect.getsource(otel_span), (
        "mcp.shared._otel.otel_span no longer makes its span current: "
        "observe.tracing.annotate_request (trace.get_current_span) would miss it"
    )


def test_the_per_request_channel_front_questions_opens_is_still_there():
    """front.questions asks a 2025-11-25 client on its call's stream through the SDK's
    per-request channel (`ctx.session._request_outbound`, a `_JSONRPCDispatchContext` whose
    frozen `transport` says whether it may send requests) and resolves the answer with the
    dispatcher's `_resolve_pending`; it drives the SDK client's input-required loop."""
    import dataclasses

    from mcp.client._input_required import (
        InputRequiredRoundsExceededError,
        run_input_required_driver,
    )
    from mcp.server.session import ServerSession
    from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher, _JSONRPCDispatchContext
    from mcp.shared.transport_context import TransportContext
    from mcp_types.methods import parse_client_result

    assert "_request_outbound" in inspect.getsource(ServerSession.__init__), (
        "ServerSession no longer keeps _request_outbound: see front/questions.py"
    )
    fields = {field.name for field in dataclasses.fields(_JSONRPCDispatchContext)}
    assert {"transport", "_dispatcher", "_request_id"} <= fields, (
        "_JSONRPCDispatchContext changed its fields: see front/questions.py"
    )
    assert "can_send_request" in {field.name for field in dataclasses.fields(TransportContext)}
    assert list(inspect.signature(JSONRPCDispatcher._resolve_pending).parameters) == [
        "self",
        "request_id",
        "outcome",
    ], "JSONRPCDispatcher._resolve_pending changed: see front/questions.py"
    assert "request_id" in inspect.getsource(JSONRPCDispatcher.send_raw_request)
    assert {"dispatch", "retry", "max_rounds"} <= set(
        inspect.signature(run_input_required_driver).parameters
    ), "the SDK's input-required driver changed: see metatools/use_tool.py"
    assert InputRequiredRoundsExceededError(3).max_rounds == 3
    assert callable(parse_client_result)
