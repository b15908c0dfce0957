"""`_meta` both ways through use_tool (issue 34): a tool definition's `icons`, `_meta` and
`execution` reach open_toolbox's entries as the server offers them, and a client's request
`_meta` (custom keys, trace context) reaches the server, without the gateway's progress
token or the client's reserved keys (the server gets the gateway's own 2026-07-28
envelope instead, with the calling client's capabilities); with tracing on, the gateway's
span is the downstream request's parent. Both protocol generations.

A stdio server is spoken to in 2026-07-28 where it speaks it, whose tool definitions have
no `execution` (tasks became an extension): it reaches the client from a server spoken to
in 2025-11-25 (the remote probe here)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_gateway import __version__
from tests.harness.live import LiveGateway, TenantSetup, add_relay_probe, running_gateway
from tests.harness.results import INITIALIZE_PARAMS, payload, raw_rpc, text_of, use
from tests.harness.servers import server_process
from toolboxes.models import Server

pytestmark = [pytest.mark.anyio]

DECORATED = {
    "name": "decorated",
    "description": "A tool with icons, _meta and execution",
    "inputSchema": {"type": "object"},
    "icons": [
        {"src": "https://example.org/probe.png", "mimeType": "image/png", "sizes": ["48x48"]}
    ],
    "_meta": {"ui/resourceUri": "ui://probe/panel", "probe/version": 3},
    "server": "probe",
    "toolbox": "dev",
}
WITH_EXECUTION = {**DECORATED, "execution": {"taskSupport": "optional"}}
# The envelope a 2026-07-28 server gets from the gateway, the calling client's capabilities
# (here: none declared) in it.
ENVELOPE = {
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "workbench-gateway", "version": __version__},
    "io.modelcontextprotocol/logLevel": "debug",
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
}
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
TRACEPARENT = f"00-{TRACE_ID}-b7ad6b7169203331-01"
SENT_META = {"acme/request": {"ticket": 42}, "traceparent": TRACEPARENT, "tracestate": "acme=1"}


@pytest.fixture
def probe(make_setup) -> TenantSetup:
    setup = make_setup()
    add_relay_probe(setup.toolbox("dev"))
    return setup


@pytest.fixture
def remote_probe(make_setup) -> Iterator[TenantSetup]:
    """The probe as a remote server, spoken to in 2025-11-25."""
    with server_process("relay_probe.py") as port:
        setup = make_setup()
        Server.objects.create(
            toolbox=setup.toolbox("dev"),
            name="probe",
            transport="streamable-http",
            url=f"http://127.0.0.1:{port}/mcp",
        )
        yield setup


def decorated(data: dict[str, Any]) -> dict[str, Any]:
    [entry] = [tool for tool in data["tools"] if tool["name"] == "decorated"]
    return entry


async def test_icons_meta_and_execution_reach_open_toolbox(live_gateway, probe):
    async with live_gateway.session(probe.key) as session:
        listed = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert decorated(listed) == DECORATED


async def test_icons_meta_and_execution_reach_a_2026_client(live_gateway, probe):
    async with live_gateway.client(probe.key) as client:
        listed = payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert decorated(listed) == DECORATED


async def test_execution_reaches_the_client_from_a_2025_server(live_gateway, remote_probe):
    async with live_gateway.client(remote_probe.key) as client:
        listed = payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert decorated(listed) == WITH_EXECUTION


def received(result: Any) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    return result.structured_content


async def raw_session(http: httpx2.AsyncClient, url: str, key: str) -> str:
    """A 2025-11-25 session of raw requests (no SDK client: in a process that records
    spans, the SDK's client would put its own trace context in `_meta`), toolbox open."""
    answer = await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS, key=key)
    session_id = answer.headers["mcp-session-id"]
    opened = await raw_rpc(
        http,
        url,
        "tools/call",
        {"name": "open_toolbox", "arguments": {"toolbox": "dev"}},
        key=key,
        session_id=session_id,
    )
    assert opened.status_code == 200, opened.text
    return session_id


async def raw_echo_meta(http: httpx2.AsyncClient, url: str, key: str, session_id: str) -> Any:
    answer = await raw_rpc(
        http,
        url,
        "tools/call",
        {"name": "use_tool", "arguments": use("dev", "probe", "echo_meta"), "_meta": SENT_META},
        key=key,
        session_id=session_id,
    )
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]


async def test_the_request_meta_reaches_the_server(live_gateway, probe):
    """Custom keys as sent; the trace context the client's, or (when this process records
    spans) the gateway's span's, in the client's trace."""
    async with httpx2.AsyncClient(timeout=60) as http:
        session_id = await raw_session(http, live_gateway.url, probe.key)
        meta = await raw_echo_meta(http, live_gateway.url, probe.key, session_id)
    assert meta.pop("acme/request") == {"ticket": 42}
    traceparent = meta.pop("traceparent")
    assert traceparent.split("-")[1] == TRACE_ID
    tracestate = meta.pop("tracestate")
    assert traceparent == TRACEPARENT or tracestate == "acme=1"
    assert meta == ENVELOPE


async def test_the_gateways_progress_token_replaces_the_clients(live_gateway, probe):
    async with live_gateway.session(probe.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool(
            "use_tool",
            use("dev", "probe", "echo_meta"),
            meta={"acme/request": {"ticket": 42}},
            progress_callback=_no_progress,
        )
        without = await session.call_tool("use_tool", use("dev", "probe", "echo_meta"))
    meta = received(result)
    # The client's progress token is the gateway's own business: the server gets the
    # gateway's token instead (an int its SDK chose), never the client's (a string here).
    assert isinstance(meta.pop("progressToken"), int)
    assert meta.pop("acme/request") == {"ticket": 42}
    assert set(meta) - set(ENVELOPE) <= {"traceparent", "tracestate"}  # a trace context
    assert set(received(without)) - set(ENVELOPE) <= {"traceparent", "tracestate"}


async def test_the_request_meta_of_a_2026_client_reaches_the_server(live_gateway, probe):
    async with live_gateway.client(probe.key) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await client.call_tool(
            "use_tool", use("dev", "probe", "echo_meta"), meta=SENT_META
        )
    meta = received(result)
    # The 2026-07-28 envelope (protocol version, client info, capabilities) describes the
    # client's session with the gateway: not passed on. (The trace context may be the SDK
    # client's own, in a process that records spans.)
    assert meta.pop("acme/request") == {"ticket": 42}
    assert len(meta.pop("traceparent").split("-")) == 4
    assert {key: meta.pop(key) for key in ENVELOPE} == ENVELOPE
    assert set(meta) <= {"tracestate"}


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    pass


_exporter = InMemorySpanExporter()


@pytest.fixture
def traced_gateway(transactional_db: None) -> Iterator[LiveGateway]:
    """A gateway that records spans (in memory; one provider per process, shared with
    the other tests that trace)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_exporter))
    _exporter.clear()
    with running_gateway() as live:
        yield live


async def test_the_gateways_span_is_the_parent_of_the_downstream_request(traced_gateway, probe):
    async with httpx2.AsyncClient(timeout=60) as http:
        session_id = await raw_session(http, traced_gateway.url, probe.key)
        meta = await raw_echo_meta(http, traced_gateway.url, probe.key, session_id)
    assert meta["acme/request"] == {"ticket": 42}
    _, trace_id, parent_id, _ = meta["traceparent"].split("-")
    spans = _exporter.get_finished_spans()
    [sent] = [s for s in spans if s.name == "MCP send tools/call echo_meta"]
    [downstream] = [s for s in spans if s.name == "tools/call echo_meta"]
    # The downstream request's parent is the SDK's send span, inside the gateway's span of
    # the downstream call, in the client's trace.
    assert int(parent_id, 16) == sent.context.span_id
    assert sent.parent.span_id == downstream.context.span_id
    assert int(trace_id, 16) == downstream.context.trace_id == int(TRACE_ID, 16)


async def test_the_toolbox_endpoints_other_requests_are_spans_of_their_own(traced_gateway, probe):
    """A toolbox endpoint's `prompts/get` and `resources/read`: a downstream span named for
    the method (and the prompt), the downstream request's parent, in the client's trace."""
    url = traced_gateway.url.rstrip("/") + "/t/acme/toolboxes/dev"
    asked = {
        "prompts/get": {"name": "probe__echo_meta", "_meta": SENT_META},
        "resources/read": {"uri": "probe://echo_meta", "_meta": SENT_META},
    }
    echoed: dict[str, Any] = {}
    async with httpx2.AsyncClient(timeout=60) as http:
        started = await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS, key=probe.key)
        session_id = started.headers["mcp-session-id"]
        for method, params in asked.items():
            answer = await raw_rpc(http, url, method, params, key=probe.key, session_id=session_id)
            assert answer.status_code == 200, answer.text
            result = answer.json()["result"]
            text = (
                result["messages"][0]["content"]["text"]
                if method == "prompts/get"
                else result["contents"][0]["text"]
            )
            echoed[method] = json.loads(text)
    # By id: each test of the module that traces adds its processor to the one provider.
    spans = list({s.context.span_id: s for s in _exporter.get_finished_spans()}.values())
    named = {"prompts/get": "prompts/get echo_meta", "resources/read": "resources/read"}
    for method, name in named.items():
        meta = echoed[method]
        assert meta["acme/request"] == {"ticket": 42}
        _, trace_id, parent_id, _ = meta["traceparent"].split("-")
        [downstream] = [s for s in spans if s.name == name and s.kind == trace.SpanKind.CLIENT]
        [sent] = [s for s in spans if s.context.span_id == int(parent_id, 16)]
        assert sent.parent.span_id == downstream.context.span_id
        assert downstream.attributes["mcp.method.name"] == method
        assert downstream.attributes["workbench.server"] == "probe"
        assert int(trace_id, 16) == downstream.context.trace_id == int(TRACE_ID, 16)
