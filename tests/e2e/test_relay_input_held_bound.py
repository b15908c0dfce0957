"""The bound on calls held for a 2026-07-28 client's answer (`metatools.held_calls`), here
1 (WORKBENCH_HELD_CALLS): past it, the question of a server spoken to in 2025-11-25 is
refused, the server answers its client as it answers a client that refuses, the operator
is told; once the held call ends, the next one is held again. (The probe twice, as two
servers of the toolbox: each call on its pool's connection, none on one of its own.)"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import anyio
import mcp_types as types
import pytest

from mcp_gateway.observe.metrics import metrics
from tests.e2e.test_relay_input import FORM, answered
from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup, running_gateway
from tests.harness.results import error_of, payload, use
from tests.harness.servers import server_process
from toolboxes.models import Server

pytestmark = pytest.mark.anyio

ASK = use("dev", "probe", "ask_form")
ASK_OTHER = use("dev", "other", "ask_form")
ANSWER = {"ask": types.ElicitResult(action="accept", content={"name": "Ada"})}
REFUSED = (
    "DOWNSTREAM_ERROR",
    "Error executing tool 'ask_form' in server 'other' (toolbox 'dev'): Workbench cannot hold "
    "this call for its client's answer to this elicitation/create: too many calls wait for "
    "input in this process; try again later",
)


@pytest.fixture
def held_one(settings, transactional_db) -> Iterator[tuple[LiveGateway, TenantSetup]]:
    """A gateway that holds one call at once, and a tenant whose probe is a remote server
    (spoken to in 2025-11-25: it asks with a request during the call)."""
    settings.WORKBENCH_HELD_CALLS = 1
    with server_process("relay_probe.py") as port:
        setup = make_tenant_setup("heldbound")
        toolbox = setup.toolbox("dev")
        for name in ("probe", "other"):
            Server.objects.create(
                toolbox=toolbox,
                name=name,
                transport="streamable-http",
                url=f"http://127.0.0.1:{port}/mcp",
                pinning="off",
            )
        with running_gateway() as live:
            yield live, setup


async def _elicit(ctx, params) -> types.ElicitResult:  # declares elicitation
    raise AssertionError("a 2026-07-28 client is asked by input-required results")


async def _answer(client, call: dict, held: types.InputRequiredResult) -> object:
    """The held call retried with the form's answer and its request state."""
    return await client.session.call_tool(
        "use_tool",
        call,
        input_responses=ANSWER,
        request_state=held.request_state,
        allow_input_required=True,
    )


async def test_past_the_bound_a_question_is_refused_until_the_held_call_ends(held_one, caplog):
    caplog.set_level(logging.WARNING, logger="workbench.relay")
    live, setup = held_one
    refusals = metrics().relay_bounds.labels("heldbound", "dev", "other", "held_calls")
    before = refusals._value.get()
    with anyio.fail_after(120):
        async with live.client(setup.key, elicitation_callback=_elicit) as client:
            payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
            held = await client.session.call_tool("use_tool", ASK, allow_input_required=True)
            assert isinstance(held, types.InputRequiredResult), held
            refused = await client.session.call_tool(
                "use_tool", ASK_OTHER, allow_input_required=True
            )
            assert error_of(refused) == REFUSED
            assert refusals._value.get() == before + 1
            assert caplog.messages == [
                "[heldbound/dev/other] elicitation/create refused: the calls waiting for input "
                "in this process are at their bound, 1 (WORKBENCH_HELD_CALLS)"
            ]
            assert answered(await _answer(client, ASK, held)) == FORM
            again = await client.session.call_tool("use_tool", ASK_OTHER, allow_input_required=True)
            assert isinstance(again, types.InputRequiredResult), again  # held again
            assert answered(await _answer(client, ASK_OTHER, again)) == FORM


async def test_a_refused_question_on_a_connection_of_its_own_reaches_its_client(held_one):
    """The second asking call of one server while the first is held runs on a connection
    of its own (`lone_calls`): the server's error, past the bound, reaches its client as
    the contract's DOWNSTREAM_ERROR (not as the task group's exception group)."""
    live, setup = held_one
    with anyio.fail_after(120):
        async with live.client(setup.key, elicitation_callback=_elicit) as client:
            payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
            held = await client.session.call_tool("use_tool", ASK, allow_input_required=True)
            assert isinstance(held, types.InputRequiredResult), held
            refused = await client.session.call_tool("use_tool", ASK, allow_input_required=True)
            assert error_of(refused) == (REFUSED[0], REFUSED[1].replace("'other'", "'probe'"))
            assert answered(await _answer(client, ASK, held)) == FORM
