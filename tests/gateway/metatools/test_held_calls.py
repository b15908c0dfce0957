"""A call held for a 2026-07-28 client's retry (its server, spoken to in 2025-11-25, asked
during the call): its question, the answer handed back, and who may take it."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest

from mcp_gateway.metatools.held_calls import HELD_PREFIX, HeldCall, HeldCalls, answer_of

pytestmark = pytest.mark.anyio

QUESTION = types.ListRootsRequest()
ROOTS = types.ListRootsResult(roots=[])


async def test_a_held_calls_question_and_answer():
    held = HeldCall()

    async def server_call() -> str:
        answer = await held.ask(QUESTION)
        return f"got {type(answer).__name__}"

    with anyio.fail_after(10):
        held.start(server_call())
        question, reply = await held.next()
        assert question == QUESTION and reply is not None
        calls = HeldCalls()
        state = calls.keep(held, reply, "ada")
        assert state.startswith(HELD_PREFIX)
        assert calls.take(state, "bob") is None  # another caller's or tool's: nothing
        taken = calls.take(state, "ada")
        assert taken is not None and calls.take(state, "ada") is None  # once
        HeldCall.answer(taken[1], answer_of({"ask": ROOTS}))
        assert await held.next() == ("got ListRootsResult", None)


async def test_an_answer_to_a_call_that_ended_is_dropped():
    held = HeldCall()
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
