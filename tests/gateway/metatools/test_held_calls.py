"""A call held for a 2026-07-28 client's retry (its server, spoken to in 2025-11-25, asked
during the call): its question, the answer handed back, who may take it, and the bound on
how many are held at once (each one's place given back however it ends)."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp_gateway.metatools.held_calls import HELD_PREFIX, HeldCall, HeldCalls, answer_of
from mcp_gateway.observe.metrics import metrics
from mcp_gateway.snapshots.servers import ServerRef
from tests.harness.waits import eventually

pytestmark = pytest.mark.anyio

QUESTION = types.ListRootsRequest()
ROOTS = types.ListRootsResult(roots=[])
REF = ServerRef("acme", "dev", "probe")
FULL = types.ErrorData(
    code=types.INVALID_REQUEST,
    message="Workbench cannot hold this call for its client's answer to this roots/list: too "
    "many calls wait for input in this process; try again later",
)


async def test_a_held_calls_question_and_answer():
    calls = HeldCalls()
    held = calls.call(REF)

    async def server_call() -> str:
        answer = await held.ask(QUESTION)
        return f"got {type(answer).__name__}"

    with anyio.fail_after(10):
        held.start(server_call())
        question, reply = await held.next()
        assert question == QUESTION and reply is not None
        state = calls.keep(held, reply, "ada")
        assert state.startswith(HELD_PREFIX)
        assert calls.take(state, "bob") is None  # another caller's or tool's: nothing
        taken = calls.take(state, "ada")
        assert taken is not None and calls.take(state, "ada") is None  # once
        HeldCall.answer(taken[1], answer_of({"ask": ROOTS}))
        assert await held.next() == ("got ListRootsResult", None)


async def test_an_answer_to_a_call_that_ended_is_dropped():
    held = HeldCalls().call(REF)
    deadline = anyio.CancelScope()  # the server's timeout, say

    async def server_call() -> str:
        with deadline:
            await held.ask(QUESTION)
        raise TimeoutError("timed out")

    with anyio.fail_after(10):
        held.start(server_call())
        _, reply = await held.next()
        assert reply is not None
        deadline.cancel()
        done, nothing = await held.next()
        HeldCall.answer(reply, ROOTS)  # nobody waits: dropped
    assert isinstance(done, TimeoutError) and nothing is None


def test_a_retry_without_the_answer_tells_the_server():
    assert answer_of({}) == types.ErrorData(
        code=types.INVALID_PARAMS, message="no answer to the question"
    )


async def asking(held: HeldCall) -> Any:
    """A server's call that asks once and ends with its answer."""
    return await held.ask(QUESTION)


async def held_asking(held: HeldCall) -> Any:
    """Starts `asking` and returns the reply its question waits on (it was held)."""
    held.start(asking(held))
    question, reply = await held.next()
    assert question == QUESTION and reply is not None
    return reply


def refusals() -> float:
    return metrics().relay_bounds.labels(*REF, "held_calls")._value.get()


async def test_past_the_bound_a_question_is_refused_until_a_held_call_ends(caplog):
    caplog.set_level(logging.WARNING, logger="workbench.relay")
    calls = HeldCalls(limit=1)
    first, second, third = (calls.call(REF) for _ in range(3))
    before = refusals()
    with anyio.fail_after(10):
        reply = await held_asking(first)
        state = calls.keep(first, reply, "ada")
        second.start(asking(second))
        assert await second.next() == (FULL, None)  # the server's answer: the refusal
        assert calls.holding == 1
        assert refusals() == before + 1
        assert caplog.messages == [
            "[acme/dev/probe] roots/list refused: the calls waiting for input in this process "
            "are at their bound, 1 (WORKBENCH_HELD_CALLS)"
        ]
        taken = calls.take(state, "ada")
        assert taken is not None
        HeldCall.answer(taken[1], ROOTS)
        assert await first.next() == (ROOTS, None)
        await eventually(lambda: calls.holding == 0, 10, "the answered call's place back")
        reply = await held_asking(third)  # held again
        HeldCall.answer(reply, ROOTS)
        assert await third.next() == (ROOTS, None)


async def test_a_held_calls_place_comes_back_when_it_fails():
    calls = HeldCalls(limit=1)
    held = calls.call(REF)
    failing = anyio.CancelScope()  # the server's timeout, say

    async def server_call() -> None:
        with failing:
            await held.ask(QUESTION)
        raise TimeoutError("timed out")

    with anyio.fail_after(10):
        held.start(server_call())
        _, reply = await held.next()
        assert reply is not None
        state = calls.keep(held, reply, "ada")
        assert calls.holding == 1
        failing.cancel()
        await eventually(lambda: calls.holding == 0, 10, "the failed call's place back")
    assert calls.take(state, "ada") is None  # its question went with it


async def test_a_held_calls_place_comes_back_when_its_request_is_cancelled():
    """The client's request gives up while the call runs: no retry could take what comes
    next, so the call is cancelled, as a call not held would be."""
    calls = HeldCalls(limit=1)
    held = calls.call(REF)
    asked = anyio.Event()

    async def server_call() -> Any:
        asked.set()
        return await held.ask(QUESTION)

    with anyio.fail_after(10):
        held.start(server_call())
        await asked.wait()
        assert calls.holding == 1
        with anyio.CancelScope() as request:
            request.cancel()
            await held.next()
        await eventually(lambda: calls.holding == 0, 10, "the cancelled call's place back")


async def test_a_held_calls_place_comes_back_once_its_question_expires():
    """Nobody came back: the question is forgotten, the server answered an error, and the
    call that ends then gives its place back."""
    calls = HeldCalls(limit=1, ttl=0.01)
    held = calls.call(REF)

    async def server_call() -> str:
        try:
            await held.ask(QUESTION)
        except anyio.EndOfStream:
            return "no answer"
        return "answered"

    with anyio.fail_after(10):
        held.start(server_call())
        _, reply = await held.next()
        assert reply is not None
        calls.keep(held, reply, "ada")
        assert calls.holding == 1
        await eventually(lambda: calls.holding == 0, 10, "the forgotten call's place back")


async def test_one_tenant_holds_at_most_its_share_of_the_bound(caplog):
    """A quarter of the process's bound per tenant: its next question is refused with the
    tenant's text while another tenant's is still held."""
    caplog.set_level(logging.WARNING, logger="workbench.relay")
    calls = HeldCalls(limit=8)  # 2 for one tenant
    first, second, third = (calls.call(REF) for _ in range(3))
    other = calls.call(ServerRef("globex", "dev", "probe"))
    with anyio.fail_after(10):
        replies = [await held_asking(held) for held in (first, second)]
        third.start(asking(third))
        assert await third.next() == (
            types.ErrorData(
                code=types.INVALID_REQUEST,
                message="Workbench cannot hold this call for its client's answer to this "
                "roots/list: too many of this tenant's calls wait for input in this process; "
                "try again later",
            ),
            None,
        )
        replies.append(await held_asking(other))  # another tenant's: held
        assert calls.holding == 3
        assert caplog.messages == [
            "[acme/dev/probe] roots/list refused: its tenant's calls waiting for input in "
            "this process are at their bound, 2 (WORKBENCH_HELD_CALLS)"
        ]
        for reply in replies:
            HeldCall.answer(reply, ROOTS)
        for held in (first, second, other):
            assert await held.next() == (ROOTS, None)
