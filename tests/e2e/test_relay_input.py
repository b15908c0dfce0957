"""Input a downstream server asks the client for (issue 34): form and URL elicitation,
sampling and roots, through use_tool and the toolbox endpoint.

A 2026-07-28 client that declared the capability gets the server's input-required result
(the gateway's own sealed `requestState` in it) and its retry reaches the server: as
directly, it answers `answered <json>`. A client that declared nothing gets the server's
own answer to a client that declared nothing (2025-11-25 clients:
`test_relay_input_2025.py`).
A state altered, another caller's or another tool's is refused with one text; two
callers at once on one tenant's server each get their own question."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types
import pytest
from asgiref.sync import sync_to_async

from tests.harness.live import LiveGateway, TenantSetup, add_relay_probe, make_tenant_setup
from tests.harness.results import error_of, payload, text_of, use

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("relay_input")]

FORM = {"action": "accept", "content": {"name": "Ada"}}
URL = {"action": "accept"}
SAMPLE = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "probe-model"}
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}
# Each probe tool, what the client's callback answers, and what a client that declared
# nothing is told by the server.
ASKS = {
    "ask_form": (FORM, "form elicitation"),
    "ask_url": (URL, "URL elicitation"),
    "ask_sample": (SAMPLE, "sampling"),
    "ask_roots": (ROOTS, "roots"),
}
REFUSED_STATE = (
    "Error executing tool 'ask_form' in server 'probe' (toolbox 'dev'): the request state is "
    "not valid for this call (altered, expired, or issued to another caller or tool); call "
    "the tool again without it"
)


class Answers:
    """A client's callbacks: what it answers, and what it was asked."""

    def __init__(self, name: str = "Ada") -> None:
        self.name = name
        self.asked: list[Any] = []

    async def elicit(self, ctx: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params)
        if params.mode == "url":
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"name": self.name})

    async def sample(self, ctx: Any, params: Any) -> types.CreateMessageResult:
        self.asked.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="hi"),
            model="probe-model",
        )

    async def roots(self, ctx: Any) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])

    def callbacks(self) -> dict[str, Any]:
        return {
            "elicitation_callback": self.elicit,
            "sampling_callback": self.sample,
            "list_roots_callback": self.roots,
        }


def answered(result: types.CallToolResult) -> Any:
    text = text_of(result)
    assert not result.is_error, text
    assert text.startswith("answered "), text
    return json.loads(text.removeprefix("answered "))


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    setup = make_tenant_setup("relayin")
    add_relay_probe(setup.toolbox("dev"))
    return setup


@pytest.fixture
def caller(world) -> TenantSetup:
    return world.new_key()


@pytest.fixture
def toolbox_endpoint(module_gateway) -> LiveGateway:
    return replace(module_gateway, url=module_gateway.url.rstrip("/") + "/t/relayin/toolboxes/dev")


@pytest.mark.parametrize("tool", list(ASKS))
async def test_a_2026_client_that_declared_it_answers_the_server(module_gateway, caller, tool):
    answers = Answers()
    async with module_gateway.client(caller.key, **answers.callbacks()) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await client.call_tool("use_tool", use("dev", "probe", tool))
    assert answered(result) == ASKS[tool][0]
    assert len(answers.asked) == 1


@pytest.mark.parametrize("tool", list(ASKS))
async def test_a_2026_client_that_declared_nothing_gets_the_servers_answer(
    module_gateway, caller, tool
):
    async with module_gateway.client(caller.key) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await client.call_tool("use_tool", use("dev", "probe", tool))
    assert error_of(result) == (
        "DOWNSTREAM_ERROR",
        f"Error executing tool '{tool}' in server 'probe' (toolbox 'dev'): "
        f"Client did not declare the {ASKS[tool][1]} capability",
    )
    assert result.structured_content["error"]["details"]["downstream_code"] == -32021


async def test_a_client_is_declared_to_have_only_what_it_declared(module_gateway, caller):
    """Elicitation only: the server may ask it a form, and is told it cannot sample nor
    list roots."""
    answers = Answers()
    async with module_gateway.client(caller.key, elicitation_callback=answers.elicit) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        form = await client.call_tool("use_tool", use("dev", "probe", "ask_form"))
        sample = await client.call_tool("use_tool", use("dev", "probe", "ask_sample"))
        roots = await client.call_tool("use_tool", use("dev", "probe", "ask_roots"))
    assert answered(form) == FORM
    assert error_of(sample)[1].endswith("Client did not declare the sampling capability")
    assert error_of(roots)[1].endswith("Client did not declare the roots capability")


async def test_a_2025_client_is_declared_to_have_nothing(module_gateway, caller):
    """A 2025-11-25 client that declared nothing at its initialize: the server answers as to
    a client that declared nothing."""
    async with module_gateway.session(caller.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool("use_tool", use("dev", "probe", "ask_form"))
    assert error_of(result)[1].endswith("Client did not declare the form elicitation capability")


async def test_the_toolbox_endpoint_relays_it_too(toolbox_endpoint, caller):
    answers = Answers()
    async with toolbox_endpoint.client(caller.key, **answers.callbacks()) as client:
        form = await client.call_tool("probe__ask_form", {})
        roots = await client.call_tool("probe__ask_roots", {})
    assert answered(form) == FORM
    assert answered(roots) == ROOTS


async def test_the_toolbox_endpoint_tells_the_server_what_the_client_declared(
    toolbox_endpoint, caller
):
    async with toolbox_endpoint.client(caller.key) as client:
        result = await client.call_tool("probe__ask_url", {})
    assert error_of(result) == (
        "DOWNSTREAM_ERROR",
        "Error executing tool 'ask_url' in server 'probe' (toolbox 'dev'): "
        "Client did not declare the URL elicitation capability",
    )


async def _asked(client: Any, tool: str = "ask_form") -> types.InputRequiredResult:
    """The input-required result itself (the SDK's loop not run)."""
    first = await client.session.call_tool(
        "use_tool", use("dev", "probe", tool), allow_input_required=True
    )
    assert isinstance(first, types.InputRequiredResult), first
    return first


async def _retry(client: Any, state: str | None, tool: str = "ask_form") -> Any:
    return await client.session.call_tool(
        "use_tool",
        use("dev", "probe", tool),
        input_responses={"ask": types.ElicitResult(action="accept", content={"name": "Ada"})},
        request_state=state,
        allow_input_required=True,
    )


async def test_the_client_gets_the_gateways_sealed_state_not_the_servers(module_gateway, caller):
    answers = Answers()
    async with module_gateway.client(caller.key, **answers.callbacks()) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        first = await _asked(client)
        again = await _retry(client, first.request_state)
    assert first.input_requests is not None and list(first.input_requests) == ["ask"]
    assert first.request_state and "probe-state" not in first.request_state
    assert answered(again) == FORM


async def test_a_forged_state_is_refused(module_gateway, caller):
    answers = Answers()
    async with module_gateway.client(caller.key, **answers.callbacks()) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        first = await _asked(client)
        assert first.request_state is not None
        forged = first.request_state[:-4] + (
            "AAAA" if first.request_state[-4:] != "AAAA" else "BBBB"
        )
        results = [await _retry(client, state) for state in (forged, "probe-state", "")]
    for result in results:
        assert error_of(result) == ("INVALID_PARAMETERS", REFUSED_STATE)


async def test_another_callers_or_another_tools_state_is_refused(module_gateway, world, caller):
    other = await sync_to_async(world.new_key)()
    answers = Answers()
    async with module_gateway.client(caller.key, **answers.callbacks()) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        first = await _asked(client)
        other_tool = await _retry(client, first.request_state, tool="ask_url")
    async with module_gateway.client(other.key, **answers.callbacks()) as thief:
        payload(await thief.call_tool("open_toolbox", {"toolbox": "dev"}))
        stolen = await _retry(thief, first.request_state)
    assert error_of(stolen) == ("INVALID_PARAMETERS", REFUSED_STATE)
    assert error_of(other_tool) == (
        "INVALID_PARAMETERS",
        REFUSED_STATE.replace("'ask_form'", "'ask_url'"),
    )


async def test_two_callers_at_once_each_answer_their_own(module_gateway, world):
    """One pooled connection to the tenant's server, two callers asked at once: each
    question reaches its own caller, each answer its own call."""
    keys = [await sync_to_async(world.new_key)() for _ in range(2)]
    names = ["Ada", "Bob"]
    results: dict[str, Any] = {}
    asked: dict[str, Answers] = {}

    async def one(key: TenantSetup, name: str) -> None:
        answers = asked[name] = Answers(name)
        async with module_gateway.client(key.key, **answers.callbacks()) as client:
            payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
            results[name] = await client.call_tool("use_tool", use("dev", "probe", "ask_form"))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for key, name in zip(keys, names, strict=True):
                group.start_soon(one, key, name)
    for name in names:
        assert answered(results[name]) == {"action": "accept", "content": {"name": name}}
        assert len(asked[name].asked) == 1
