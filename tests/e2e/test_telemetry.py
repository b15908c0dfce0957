"""The telemetry seam end to end: after a known sequence of calls, /metrics (parsed with
prometheus_client's own parser) shows exact counts, the SDK's in-memory exporter holds
the spans with the MCP attributes, and the call log holds one row per call."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from asgiref.sync import sync_to_async
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from calls.models import CallRecord
from tests.harness.live import LiveGateway, running_gateway
from tests.harness.results import error_of, payload, use
from tests.harness.waits import eventually
from toolboxes.models import ApiKey, Server

pytestmark = pytest.mark.anyio

TENANT = "tlm"
TOKEN = "metrics-token-for-tests"
_exporter = InMemorySpanExporter()


def _tracer_provider() -> None:
    """One SDK provider per test process (OpenTelemetry allows one); spans go in memory."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)


@pytest.fixture
def traced_gateway(settings: Any, transactional_db: None) -> Iterator[LiveGateway]:
    """A gateway with a use_tool budget of 6 calls, spans captured, and /metrics open only
    to the token (no address allowed)."""
    settings.WORKBENCH_KEY_RATE_LIMIT = 0.0001
    settings.WORKBENCH_KEY_RATE_BURST = 6
    settings.WORKBENCH_METRICS_TOKEN = TOKEN
    settings.WORKBENCH_METRICS_ALLOWED_IPS = ["192.0.2.0/24"]
    _tracer_provider()
    _exporter.clear()
    with running_gateway() as live:
        yield live


@pytest.fixture
def tlm(make_setup: Any) -> Any:
    setup = make_setup(TENANT)
    dev = setup.toolbox("dev")
    ops = setup.toolbox("ops")
    setup.fixture_server(dev, "fs")
    setup.fixture_server(dev, "sleepy", position=1, timeout=1)
    broken = Server(
        toolbox=dev,
        name="broken",
        position=2,
        command=sys.executable,
        args=["-c", "import sys; sys.exit(1)"],
    )
    broken.full_clean()
    broken.save()
    setup.fixture_server(ops, "fs")
    _, setup.dev_only_key = ApiKey.issue(setup.tenant, label="dev only", toolboxes=[dev])
    return setup


def metrics_text(live: LiveGateway, token: str | None = TOKEN) -> tuple[int, str]:
    url = live.url.removesuffix("/mcp") + "/metrics"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx2.get(url, headers=headers)
    return response.status_code, response.text


def samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels.get("tenant", TENANT) == TENANT:
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def call(toolbox: str, server: str, tool: str, outcome: str) -> tuple[tuple[str, str], ...]:
    labels = {"tenant": TENANT, "toolbox": toolbox, "server": server, "tool": tool}
    return tuple(sorted({**labels, "outcome": outcome}.items()))


async def test_metrics_spans_and_call_log_after_a_known_sequence(traced_gateway, tlm):
    live = traced_gateway
    async with live.session(tlm.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        assert error_of(await session.call_tool("open_toolbox", {"toolbox": "nope"}))[0] == (
            "TOOLBOX_NOT_FOUND"
        )
        assert not (
            await session.call_tool("use_tool", use("dev", "fs", "echo", {"text": "x"}))
        ).is_error
        assert (await session.call_tool("use_tool", use("dev", "fs", "fail"))).is_error
        codes = [
            error_of(await session.call_tool("use_tool", arguments))[0]
            for arguments in (
                use("dev", "fs", "explode"),
                use("dev", "sleepy", "slow", {"seconds": 5}),
                use("dev", "fs", "no_such_tool"),
                use("dev", "broken", "echo"),
                use("dev", "nope", "echo"),
                use("ghost", "fs", "echo"),
                {"arguments": {}},
                use("dev", "fs", "echo", {"text": "over the budget"}),
            )
        ]
    assert codes == [
        "DOWNSTREAM_ERROR",
        "TIMEOUT",
        "TOOL_NOT_FOUND",
        "CONNECTION_FAILED",
        "SERVER_NOT_FOUND",
        "TOOLBOX_NOT_OPEN",
        "INVALID_PARAMETERS",
        "RATE_LIMITED",
    ]
    async with live.session(tlm.dev_only_key) as session:
        forbidden = await session.call_tool("use_tool", use("ops", "fs", "echo"))
    assert error_of(forbidden)[0] == "FORBIDDEN"
    refusals = samples(metrics_text(live)[1], "workbench_auth_refusals_total")  # any test's
    async with httpx2.AsyncClient() as http:
        refused = await http.post(live.url, headers={"Authorization": "Bearer wb_nope_nope"})
    assert refused.status_code == 401

    # /metrics: exact counts, labels from configuration only.
    assert metrics_text(live, token=None)[0] == 404
    assert metrics_text(live, token="wrong")[0] == 404
    status, text = metrics_text(live)
    assert status == 200
    assert samples(text, "workbench_tool_calls_total") == {
        call("dev", "fs", "echo", "ok"): 1,
        call("dev", "fs", "fail", "tool_error"): 1,
        call("dev", "fs", "explode", "DOWNSTREAM_ERROR"): 1,
        call("dev", "sleepy", "slow", "TIMEOUT"): 1,
        call("dev", "fs", "", "TOOL_NOT_FOUND"): 1,  # not a tool the server listed
        call("dev", "broken", "", "CONNECTION_FAILED"): 1,
        call("dev", "", "", "SERVER_NOT_FOUND"): 1,  # "nope" is no server's name
        call("", "", "", "TOOLBOX_NOT_OPEN"): 1,
        call("", "", "", "INVALID_PARAMETERS"): 1,
        call("dev", "fs", "", "RATE_LIMITED"): 1,
        call("ops", "fs", "", "FORBIDDEN"): 1,
    }
    histogram = samples(text, "workbench_tool_call_duration_seconds_count")
    assert sum(histogram.values()) == 11
    assert samples(text, "workbench_open_toolbox_total") == {
        (("outcome", "ok"), ("tenant", TENANT), ("toolbox", "dev")): 1,
        (("outcome", "TOOLBOX_NOT_FOUND"), ("tenant", TENANT), ("toolbox", "")): 1,
    }
    assert samples(text, "workbench_rate_limited_total") == {
        (("limit", "use_tool"), ("tenant", TENANT)): 1
    }
    malformed = (("reason", "malformed_api_key"),)
    assert (
        samples(text, "workbench_auth_refusals_total")[malformed] == refusals.get(malformed, 0) + 1
    )
    starts = samples(text, "workbench_downstream_starts_total")
    assert starts[(("server", "fs"), ("tenant", TENANT), ("toolbox", "dev"))] == 1
    live_now = samples(text, "workbench_downstream_connections")
    assert live_now[(("server", "fs"), ("tenant", TENANT), ("toolbox", "dev"))] == 1
    failures = samples(text, "workbench_downstream_start_failures_total")
    assert failures[(("server", "broken"), ("tenant", TENANT), ("toolbox", "dev"))] == 2

    # Spans: one per MCP request (the SDK's, with the gateway's attributes) and one per
    # downstream call, the downstream's carrying the trace on in _meta.traceparent.
    spans = _exporter.get_finished_spans()
    requests = [
        s for s in spans if s.kind == trace.SpanKind.SERVER and s.name == "tools/call use_tool"
    ]
    assert len(requests) == 11  # every use_tool of both sessions
    failed = [s for s in requests if s.attributes.get("workbench.outcome") == "tool_error"]
    assert len(failed) == 1
    attributes = failed[0].attributes
    assert attributes["error.type"] == "tool_error"
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["network.transport"] == "tcp"
    assert attributes["mcp.protocol.version"]
    assert attributes["mcp.session.id"]
    assert (attributes["workbench.tenant"], attributes["workbench.toolbox"]) == (TENANT, "dev")
    assert (attributes["workbench.server"], attributes["workbench.tool"]) == ("fs", "fail")
    downstream = [
        s for s in spans if s.name == "tools/call fail" and s.kind == trace.SpanKind.CLIENT
    ]
    assert len(downstream) == 1
    assert downstream[0].parent.span_id == failed[0].context.span_id
    assert downstream[0].attributes["gen_ai.tool.name"] == "fail"
    assert downstream[0].attributes["error.type"] == "tool_error"
    assert downstream[0].attributes["workbench.server"] == "fs"
    sent = [s for s in spans if s.name == "MCP send tools/call fail"]
    assert sent and sent[0].parent.span_id == downstream[0].context.span_id

    # The call log: every call, with its client, outcome and incident.
    def rows() -> list[CallRecord]:
        return list(CallRecord.objects.filter(tenant__slug=TENANT).order_by("at"))

    await eventually(lambda: sync_to_async(lambda: len(rows()) == 13)(), 15, "13 call log rows")
    logged = await sync_to_async(rows)()
    assert [(r.meta_tool, r.outcome) for r in logged[:4]] == [
        ("open_toolbox", "ok"),
        ("open_toolbox", "TOOLBOX_NOT_FOUND"),
        ("use_tool", "ok"),
        ("use_tool", "tool_error"),
    ]
    echo = logged[2]
    assert (echo.toolbox, echo.server, echo.tool) == ("dev", "fs", "echo")
    assert echo.client_name == "mcp" and echo.key_prefix == tlm.api_key.prefix
    assert echo.bytes_in > 0 and echo.bytes_out > 0
    assert echo.arguments == ""  # not stored: the tenant did not opt in
    timeout = next(r for r in logged if r.outcome == "TIMEOUT")
    assert timeout.error_code == "TIMEOUT" and len(timeout.incident) == 12
    assert next(r for r in logged if r.outcome == "CONNECTION_FAILED").incident
