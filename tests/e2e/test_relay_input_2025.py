"""Input a downstream server asks a 2025-11-25 client for (issue 34): form and URL
elicitation, sampling and roots, asked during the call on its stream, through use_tool and
the toolbox endpoint.

The client declared them at its `initialize`; the server (spoken to in 2026-07-28) is told
so, asks with an input-required result, and the gateway asks the client each question as a
request on the call's stream (`elicitation/create`, ...). The client's answer comes back as
a POST of its own, which the front door leads to the call; the server gets it and answers
`answered <json>`, as directly. A client that declared nothing gets the server's own
refusal; two callers at once each get their own question; a client's error to a question
ends the call as the server's own error would."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types
import pytest
from asgiref.sync import sync_to_async

from mcp_gateway.metatools.input_state import STATE_TTL
from tests.e2e.test_relay_input import ASKS, FORM, ROOTS, Answers, answered
from tests.harness.live import LiveGateway, TenantSetup, add_relay_probe, make_tenant_setup
from tests.harness.results import error_of, payload, use

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("relay_input_2025")]


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    setup = make_tenant_setup("relayold")
    add_relay_probe(setup.toolbox("dev"))
    return setup


@pytest.fixture
def caller(world) -> TenantSetup:
    return world.new_key()


@pytest.fixture
def toolbox_endpoint(module_gateway) -> LiveGateway:
    return replace(module_gateway, url=module_gateway.url.rstrip("/") + "/t/relayold/toolboxes/dev")


@pytest.mark.parametrize("tool", list(ASKS))
async def test_a_2025_client_that_declared_it_is_asked_during_the_call(
    module_gateway, caller, tool
):
    answers = Answers()
    async with module_gateway.session(caller.key, **answers.callbacks()) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool("use_tool", use("dev", "probe", tool))
    assert answered(result) == ASKS[tool][0]
    assert len(answers.asked) == 1
    if tool == "ask_url":
        assert answers.asked[0].url == "https://example.org/probe/sign-in"
        assert answers.asked[0].elicitation_id  # 2025-11-25 requires one; 2026 sends none


@pytest.mark.parametrize("tool", list(ASKS))
async def test_a_2025_client_that_declared_nothing_gets_the_servers_answer(
    module_gateway, caller, tool
):
    async with module_gateway.session(caller.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool("use_tool", use("dev", "probe", tool))
    assert error_of(result) == (
        "DOWNSTREAM_ERROR",
        f"Error executing tool '{tool}' in server 'probe' (toolbox 'dev'): "
        f"Client did not declare the {ASKS[tool][1]} capability",
    )
    assert result.structured_content["error"]["details"]["downstream_code"] == -32021


async def test_a_2025_client_is_declared_to_have_only_what_it_declared(module_gateway, caller):
    answers = Answers()
    async with module_gateway.session(caller.key, elicitation_callback=answers.elicit) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        form = await session.call_tool("use_tool", use("dev", "probe", "ask_form"))
        sample = await session.call_tool("use_tool", use("dev", "probe", "ask_sample"))
        roots = await session.call_tool("use_tool", use("dev", "probe", "ask_roots"))
    assert answered(form) == FORM
    assert error_of(sample)[1].endswith("Client did not declare the sampling capability")
    assert error_of(roots)[1].endswith("Client did not declare the roots capability")


async def test_a_clients_error_to_the_question_ends_the_call(module_gateway, caller):
    """As directly: the server's own request would fail with the client's error."""

    async def refuse(ctx: Any, params: Any) -> types.ErrorData:
        return types.ErrorData(code=-32042, message="the person said no", data={"why": "no"})

    async with module_gateway.session(caller.key, elicitation_callback=refuse) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool("use_tool", use("dev", "probe", "ask_form"))
    assert error_of(result) == (
        "DOWNSTREAM_ERROR",
        "Error executing tool 'ask_form' in server 'probe' (toolbox 'dev'): the person said no",
    )
    details = result.structured_content["error"]["details"]
    assert (details["downstream_code"], details["downstream_data"]) == (-32042, {"why": "no"})


async def test_a_client_that_does_not_answer_in_time_ends_the_call(module_gateway, caller):
    """The client has `answer_seconds` (15 minutes; 1 s here) to answer; then its question
    is cancelled and the call ends."""
    questions = module_gateway.gateway.questions
    release = anyio.Event()

    async def hold(context: Any, params: Any) -> types.ElicitResult:
        await release.wait()
        return types.ElicitResult(action="decline")

    questions.answer_seconds = 1
    try:
        async with module_gateway.session(caller.key, elicitation_callback=hold) as session:
            payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            result = await session.call_tool("use_tool", use("dev", "probe", "ask_form"))
            release.set()
    finally:
        questions.answer_seconds = STATE_TTL
    assert error_of(result) == (
        "DOWNSTREAM_ERROR",
        "Error executing tool 'ask_form' in server 'probe' (toolbox 'dev'): "
        "the client did not answer elicitation/create within 1s",
    )
    assert result.structured_content["error"]["details"]["downstream_code"] == -32001


async def test_a_server_that_asks_for_ever_is_stopped(module_gateway, caller):
    """As the SDK's client does: at most 10 rounds of questions in one call."""
    answers = Answers()
    async with module_gateway.session(caller.key, **answers.callbacks()) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool("use_tool", use("dev", "probe", "ask_forever"))
    assert error_of(result) == (
        "DOWNSTREAM_ERROR",
        "Error executing tool 'ask_forever' in server 'probe' (toolbox 'dev'): "
        "the server asked for input more than 10 times in one call",
    )
    assert len(answers.asked) == 10


async def test_the_toolbox_endpoint_asks_a_2025_client_too(toolbox_endpoint, caller):
    answers = Answers()
    async with toolbox_endpoint.session(caller.key, **answers.callbacks()) as session:
        form = await session.call_tool("probe__ask_form", {})
        roots = await session.call_tool("probe__ask_roots", {})
    assert answered(form) == FORM
    assert answered(roots) == ROOTS


async def test_two_2025_callers_at_once_each_answer_their_own(module_gateway, world):
    """Two callers (and two sessions of one key) asked at once on one pooled connection:
    each question reaches its own session, each answer its own call."""
    keys = [await sync_to_async(world.new_key)() for _ in range(2)]
    names = ["Ada", "Bob", "Cy"]
    holders = [keys[0], keys[1], keys[1]]
    results: dict[str, Any] = {}
    asked: dict[str, Answers] = {}

    async def one(key: TenantSetup, name: str) -> None:
        answers = asked[name] = Answers(name)
        async with module_gateway.session(key.key, **answers.callbacks()) as session:
            payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            results[name] = await session.call_tool("use_tool", use("dev", "probe", "ask_form"))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for key, name in zip(holders, names, strict=True):
                group.start_soon(one, key, name)
    for name in names:
        assert answered(results[name]) == {"action": "accept", "content": {"name": name}}
        assert len(asked[name].asked) == 1
