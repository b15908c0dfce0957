"""The toolbox endpoint's requests other than tools/call (`resources/read`, `prompts/get`,
`completion/complete`) relay what a tool call relays (issue 35): progress, log messages to
a client that asked for them, the request's `_meta`, and a server's question for input
(a 2026-07-28 client by the server's input-required result with the gateway's sealed
state, a 2025-11-25 client that declared it during the request on its stream); a client
that declared nothing gets the server's own answer. The probe's resources and prompts are
tests/servers/relay_probe.py's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from pydantic import TypeAdapter

from mcp_gateway.metatools.member_requests import STATE_REFUSED
from tests.e2e.test_relay_input import FORM, Answers
from tests.harness.live import LiveGateway, TenantSetup, add_relay_probe, make_tenant_setup
from tests.harness.servers import server_process
from tests.harness.waits import eventually
from toolboxes.models import Server

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("toolbox_endpoint_relay")]

STEPS = [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
LEVEL = "io.modelcontextprotocol/logLevel"
WARNINGS = [("warning", "warning message"), ("error", "error message")]
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def the_trace_context(echoed: dict[str, Any]) -> str:
    """The `traceparent` the server got: the client's as it sent it, unless this process
    records spans (another test module installed a tracer provider, which cannot be
    removed): then the SDK's client sends its own span's and the gateway's span is the
    parent, so only its shape can be told here (`test_relay_meta` tests the parentage)."""
    traceparent = echoed["traceparent"]
    if isinstance(trace.get_tracer_provider(), TracerProvider):
        version, trace_id, parent_id, flags = traceparent.split("-")
        assert (version, len(trace_id), len(parent_id), len(flags)) == ("00", 32, 16, 2)
        return TRACEPARENT
    return traceparent


ANSWERED = "answered " + json.dumps(FORM, separators=(",", ":"))
NOT_DECLARED = "Client did not declare the form elicitation capability"
KINDS = ["resources/read", "prompts/get"]


@pytest.fixture(scope="module")
def world(module_db) -> Iterator[TenantSetup]:
    """`dev`: the probe over stdio (spoken to in 2026-07-28); `remote`: the probe over
    Streamable HTTP (spoken to in 2025-11-25)."""
    with server_process("relay_probe.py") as port:
        setup = make_tenant_setup("memberrelay")
        add_relay_probe(setup.toolbox("dev"))
        Server.objects.create(
            toolbox=setup.toolbox("remote"),
            name="probe",
            transport="streamable-http",
            url=f"http://127.0.0.1:{port}/mcp",
            pinning="off",
        )
        yield setup


@pytest.fixture
def caller(world) -> TenantSetup:
    return world.new_key()


def endpoint(module_gateway: LiveGateway, toolbox: str = "dev") -> LiveGateway:
    url = module_gateway.url.rstrip("/") + f"/t/memberrelay/toolboxes/{toolbox}"
    return replace(module_gateway, url=url)


def request_of(kind: str, name: str, meta: dict[str, Any] | None = None) -> Any:
    """The probe's resource or prompt `name`, as the request `kind`, and its result type."""
    if kind == "resources/read":
        params = types.ReadResourceRequestParams(uri=f"probe://{name}", _meta=meta)
        return types.ReadResourceRequest(params=params), types.ReadResourceResult
    prompt = types.GetPromptRequestParams(name=f"probe__{name}", _meta=meta)
    return types.GetPromptRequest(params=prompt), types.GetPromptResult


def text_of(result: types.ReadResourceResult | types.GetPromptResult) -> str:
    if isinstance(result, types.ReadResourceResult):
        (contents,) = result.contents
        assert isinstance(contents, types.TextResourceContents)
        return contents.text
    (message,) = result.messages
    assert isinstance(message.content, types.TextContent)
    return message.content.text


async def ask(session: Any, kind: str, name: str = "ask_form") -> Any:
    """What `session` (a client's) is answered, the SDK's input-required loop run by the
    client where it runs it (`mcp.Client`)."""
    if kind == "resources/read":
        return await session.read_resource(f"probe://{name}")
    return await session.get_prompt(f"probe__{name}")


class Progress:
    def __init__(self) -> None:
        self.updates: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.updates.append((progress, total, message))


class Heard:
    def __init__(self) -> None:
        self.messages: list[tuple[str, Any]] = []

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        assert params.logger == "probe"
        self.messages.append((params.level, params.data))


@pytest.mark.parametrize("kind", KINDS)
async def test_progress_reaches_a_2026_client(module_gateway, caller, kind):
    progress = Progress()
    request, result_type = request_of(kind, "progress")
    async with endpoint(module_gateway).client(caller.key) as client:
        result = await client.session.send_request(request, result_type, progress_callback=progress)
    assert text_of(result) == "done"
    assert progress.updates == STEPS


@pytest.mark.parametrize("kind", KINDS)
async def test_progress_reaches_a_2025_client(module_gateway, caller, kind):
    progress = Progress()
    request, result_type = request_of(kind, "progress")
    async with endpoint(module_gateway).session(caller.key) as session:
        result = await session.send_request(request, result_type, progress_callback=progress)
    assert text_of(result) == "done"
    assert progress.updates == STEPS


@pytest.mark.parametrize("kind", KINDS)
async def test_log_messages_reach_a_2026_client_that_set_a_level(module_gateway, caller, kind):
    heard = Heard()
    request, result_type = request_of(kind, "log")
    async with endpoint(module_gateway).client(
        caller.key, log_level="warning", logging_callback=heard
    ) as client:
        result = await client.session.send_request(request, result_type)
    assert text_of(result) == "logged"
    assert heard.messages == WARNINGS


@pytest.mark.parametrize("kind", KINDS)
async def test_log_messages_reach_a_2025_client_that_named_a_level(module_gateway, caller, kind):
    heard = Heard()
    request, result_type = request_of(kind, "log", {LEVEL: "warning"})
    quiet, _ = request_of(kind, "log")
    async with endpoint(module_gateway).session(caller.key, logging_callback=heard) as session:
        result = await session.send_request(request, result_type)
        plain = await session.send_request(quiet, result_type)
    assert text_of(result) == text_of(plain) == "logged"
    assert heard.messages == WARNINGS  # and none of the plain request's: it asked for none


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("generation", ["2025-11-25", "2026-07-28"])
async def test_the_request_meta_reaches_the_server(module_gateway, caller, kind, generation):
    """Custom keys and the trace context, as they came; not the client's progress token."""
    meta = {"acme/request": 7, "traceparent": TRACEPARENT}
    request, result_type = request_of(kind, "echo_meta", meta)
    gateway = endpoint(module_gateway)
    if generation == "2025-11-25":
        async with gateway.session(caller.key) as session:
            result = await session.send_request(request, result_type, progress_callback=Progress())
    else:
        async with gateway.client(caller.key) as client:
            result = await client.session.send_request(
                request, result_type, progress_callback=Progress()
            )
    echoed = json.loads(text_of(result))
    assert echoed["acme/request"] == 7
    assert the_trace_context(echoed) == TRACEPARENT
    # The gateway asked for progress with a token of its own.
    assert echoed["progressToken"] != (request.params.meta or {}).get("progressToken")


async def test_a_completion_carries_the_request_meta(module_gateway, caller):
    params = types.CompleteRequestParams(
        ref=types.PromptReference(type="ref/prompt", name="probe__echo_meta"),
        argument=types.CompletionArgument(name="topic", value="a"),
        _meta={"acme/request": 7, "traceparent": TRACEPARENT},
    )
    async with endpoint(module_gateway).client(caller.key) as client:
        result = await client.session.send_request(
            types.CompleteRequest(params=params), types.CompleteResult
        )
    (value,) = result.completion.values
    echoed = json.loads(value)
    assert (echoed["acme/request"], the_trace_context(echoed)) == (7, TRACEPARENT)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_2026_client_that_declared_elicitation_answers_the_server(
    module_gateway, caller, kind
):
    answers = Answers()
    async with endpoint(module_gateway).client(caller.key, **answers.callbacks()) as client:
        result = await ask(client, kind)
    assert text_of(result) == ANSWERED
    assert [params.message for params in answers.asked] == ["Your name?"]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_2026_client_gets_the_gateways_sealed_state(module_gateway, caller, kind):
    """The input-required result reaches the client with the gateway's state (not the
    server's); its retry reaches the server with the server's; an altered one is refused."""
    request, _ = request_of(kind, "ask_form")
    answer = types.ElicitResult(action="accept", content={"name": "Ada"})
    answer_type = types.ReadResourceResult if kind == "resources/read" else types.GetPromptResult
    both = TypeAdapter(answer_type | types.InputRequiredResult)
    async with endpoint(module_gateway).client(caller.key, **Answers().callbacks()) as client:
        first = await client.session.send_request(request, both)
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state and "probe-state" not in first.request_state
        assert first.input_requests is not None and list(first.input_requests) == ["ask"]
        retry = {"input_responses": {"ask": answer}, "request_state": first.request_state}
        again = request.model_copy(update={"params": request.params.model_copy(update=retry)})
        result = await client.session.send_request(again, both)
        altered = {**retry, "request_state": first.request_state[:-4] + "AAAA"}
        forged = request.model_copy(update={"params": request.params.model_copy(update=altered)})
        with pytest.raises(MCPError) as refused:
            await client.session.send_request(forged, both)
    assert text_of(result) == ANSWERED
    assert (refused.value.error.code, refused.value.error.message) == (
        types.INVALID_PARAMS,
        STATE_REFUSED,
    )


async def test_a_state_sealed_for_one_resource_is_refused_for_another(module_gateway, caller):
    read, _ = request_of("resources/read", "ask_form")
    both = TypeAdapter(types.ReadResourceResult | types.InputRequiredResult)
    async with endpoint(module_gateway).client(caller.key, **Answers().callbacks()) as client:
        first = await client.session.send_request(read, both)
        assert isinstance(first, types.InputRequiredResult)
        prompt, _ = request_of("prompts/get", "ask_form")
        params = prompt.params.model_copy(update={"request_state": first.request_state})
        with pytest.raises(MCPError) as refused:
            await client.session.send_request(
                prompt.model_copy(update={"params": params}),
                TypeAdapter(types.GetPromptResult | types.InputRequiredResult),
            )
    assert (refused.value.error.code, refused.value.error.message) == (
        types.INVALID_PARAMS,
        STATE_REFUSED,
    )


@pytest.mark.parametrize("kind", KINDS)
async def test_a_2025_client_that_declared_elicitation_is_asked_during_the_request(
    module_gateway, caller, kind
):
    answers = Answers()
    async with endpoint(module_gateway).session(caller.key, **answers.callbacks()) as session:
        result = await ask(session, kind)
    assert text_of(result) == ANSWERED
    assert [params.message for params in answers.asked] == ["Your name?"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("generation", ["2025-11-25", "2026-07-28"])
async def test_a_client_that_declared_nothing_gets_the_servers_answer(
    module_gateway, caller, kind, generation
):
    gateway = endpoint(module_gateway)
    if generation == "2025-11-25":
        async with gateway.session(caller.key) as session:
            with pytest.raises(MCPError) as refused:
                await ask(session, kind)
    else:
        async with gateway.client(caller.key) as client:
            with pytest.raises(MCPError) as refused:
                await ask(client, kind)
    assert (refused.value.error.code, refused.value.error.message) == (-32021, NOT_DECLARED)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_2025_server_asks_a_2025_client_during_the_request(module_gateway, caller, kind):
    """A server spoken to in 2025-11-25 asks by a request on its connection, answered for
    the one request in flight on it."""
    answers = Answers()
    remote = endpoint(module_gateway, "remote")
    async with remote.session(caller.key, **answers.callbacks()) as session:
        result = await ask(session, kind)
    assert text_of(result) == ANSWERED
    assert [params.message for params in answers.asked] == ["Your name?"]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_2025_servers_question_to_a_2026_client_gets_the_servers_answer(
    module_gateway, caller, kind
):
    """Not relayed (a tool call holds its call for the client's retry; these requests do
    not): the server is answered as the SDK's client answers when it declared nothing."""
    answers = Answers()
    remote = endpoint(module_gateway, "remote")
    async with remote.client(caller.key, **answers.callbacks()) as client:
        with pytest.raises(MCPError) as refused:
            await ask(client, kind)
    assert (refused.value.error.code, refused.value.error.message) == (
        types.INVALID_REQUEST,
        "Elicitation not supported",
    )
    assert answers.asked == []


def in_flight(module_gateway: LiveGateway, toolbox: str = "dev") -> int:
    """The requests the gateway has sent to this tenant's probe and not had answered."""
    return sum(
        conn.in_flight
        for conn in module_gateway.gateway.pool.connections()
        if conn.ref == ("memberrelay", toolbox, "probe")
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("generation", ["2025-11-25", "2026-07-28"])
async def test_a_cancelled_request_is_cancelled_downstream(
    module_gateway, caller, kind, generation
):
    """A 2025-11-25 client's `notifications/cancelled`, or a 2026-07-28 client's closed
    stream, ends the server's request (the SDK's client sends the notification)."""
    request, result_type = request_of(kind, "wait")
    gateway = endpoint(module_gateway)
    if generation == "2025-11-25":
        session_of = gateway.session(caller.key)
    else:
        session_of = gateway.client(caller.key)
    async with session_of as opened:
        session = opened if generation == "2025-11-25" else opened.session
        waiting = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            waiting.set()

        async with anyio.create_task_group() as group:
            group.start_soon(
                partial(session.send_request, request, result_type, progress_callback=on_progress)
            )
            with anyio.fail_after(30):
                await waiting.wait()  # the server has the request (it said so)
            assert in_flight(module_gateway) == 1
            group.cancel_scope.cancel()
        # The client's session still open: the cancellation, not its end, ended it.
        await eventually(lambda: in_flight(module_gateway) == 0, 30, "the request to end")
