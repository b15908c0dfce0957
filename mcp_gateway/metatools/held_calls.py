"""A 2026-07-28 client's call whose server, spoken to in 2025-11-25, asks it for input.

Such a server asks with a request during the call and waits for the answer; a 2026-07-28
client is asked only by an input-required result, which it answers by calling again. So
the gateway holds the downstream call (a task of its own, in this process), answers the
client with the server's question as an input-required result (the gateway's sealed state
naming the held call, `HELD_PREFIX`), and on the retry gives the server the client's
answer and waits for what comes next: the result, or another question.

A held call lives in the process that holds it: a retry that lands on another worker
process or replica finds nothing and is refused (`errors.held_elsewhere`): the client calls
again without the state. A held call ends with the server's timeout, as any call does; one
its client never comes back for is forgotten after the state's expiry.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine
from contextlib import suppress
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream

from mcp_gateway.metatools.input_state import STATE_TTL

KEY = "ask"  # the one input request's key in the client's input-required result
HELD_PREFIX = "wb-held:"  # a sealed state naming a held call, not a server's own state

Answer = types.InputResponse | types.ErrorData
# What the held call comes to next: the server's question (and where its answer goes), or
# the call's end (its answer, or the error it raised).
Question = tuple[types.InputRequest, MemoryObjectSendStream[Answer]]
Step = Question | tuple[Any, None]


class HeldCall:
    """One downstream call, run as a task of its own, whose questions wait for retries."""

    def __init__(self) -> None:
        self._steps, self._next = anyio.create_memory_object_stream[Step](1)
        self._task: asyncio.Task[None] | None = None

    def start(self, call: Coroutine[Any, Any, Any]) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(call))

    async def _run(self, call: Coroutine[Any, Any, Any]) -> None:
        try:
            done: Any = await call
        except Exception as exc:  # the caller's to raise
            done = exc
        async with self._steps:
            await self._steps.send((done, None))

    async def ask(self, request: types.InputRequest) -> Answer:
        """The connection's way to ask (`downstream.server_questions`): the question goes to
        the client's request, its answer comes with the retry."""
        send, receive = anyio.create_memory_object_stream[Answer](1)
        await self._steps.send((request, send))
        async with receive:
            return await receive.receive()

    async def next(self) -> Step:
        """The server's next question, or the call's end (then nothing follows)."""
        step = await self._next.receive()
        if step[1] is None:
            self._next.close()
        return step

    @staticmethod
    def answer(reply: MemoryObjectSendStream[Answer], answer: Answer) -> None:
        """The client's answer to the question waiting at `reply`, if it still waits (the
        server's timeout may have ended the call: `next` then says so)."""
        with reply, suppress(anyio.BrokenResourceError, anyio.WouldBlock):
            reply.send_nowait(answer)


class HeldCalls:
    """This process's held calls, by the id their sealed state names."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[HeldCall, MemoryObjectSendStream[Answer], Any]] = {}

    def keep(self, held: HeldCall, reply: MemoryObjectSendStream[Answer], owner: Any) -> str:
        """The state the client brings back for `held`, whose question waits at `reply`;
        `owner`: whose call and which tool (`input_state.Bound`), checked again when it is
        taken (a server's own state could spell the prefix)."""
        found = uuid.uuid4().hex
        self._held[found] = (held, reply, owner)
        asyncio.get_running_loop().call_later(STATE_TTL, self._forget, found)
        return HELD_PREFIX + found

    def _forget(self, found: str) -> None:
        """Nobody came back for the question: its call ends (the server's answer to that)."""
        held = self._held.pop(found, None)
        if held is not None:
            held[1].close()

    def take(
        self, state: str, owner: Any
    ) -> tuple[HeldCall, MemoryObjectSendStream[Answer]] | None:
        found = state.removeprefix(HELD_PREFIX)
        held = self._held.get(found)
        if held is None or held[2] != owner:
            return None
        del self._held[found]
        return held[0], held[1]


def answer_of(responses: types.InputResponses | None) -> Answer:
    """The client's answer to the held call's question, or an error the server gets."""
    answer = (responses or {}).get(KEY)
    if answer is None:
        return types.ErrorData(code=types.INVALID_PARAMS, message="no answer to the question")
    return answer
