"""The one patch of the SDK: its span around every request it sends, left out when nothing
records spans (a span and a trace-context injection per downstream call that nobody sees).

SDK internals, pinned by tests/gateway/observe/test_sdk_pins.py.
"""

from __future__ import annotations

from typing import Any, Literal

from mcp.shared import _otel, jsonrpc_dispatcher
from opentelemetry.trace import INVALID_SPAN


class _NoSpan:
    """What the SDK's outbound-request span is when nothing records spans: nothing."""

    __slots__ = ()

    def __enter__(self) -> Any:
        return INVALID_SPAN

    def __exit__(self, *exc: object) -> Literal[False]:
        return False


_NO_SPAN = _NoSpan()


def no_span(*args: Any, **kwargs: Any) -> _NoSpan:
    return _NO_SPAN


def _no_trace_context(meta: dict[str, Any]) -> None:
    pass  # no span is current: there is no context to pass on


def sdk_spans(on: bool) -> None:
    """The SDK opens a span (and injects its context) around every request it sends, the
    gateway's downstream calls included, whether or not anything records it. Without a
    tracer provider, a span and a propagation per call that nobody sees: left out.
    (SDK internals, pinned by tests/gateway/observe/test_sdk_pins.py.)"""
    jsonrpc_dispatcher.otel_span = _otel.otel_span if on else no_span  # type: ignore[assignment]
    jsonrpc_dispatcher.inject_trace_context = (
        _otel.inject_trace_context if on else _no_trace_context
    )
