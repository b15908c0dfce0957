"""A 2026-07-28 client's call whose server, spoken to in 2025-11-25, asks it for input.

Such a server asks with a request during the call and waits for the answer; a 2026-07-28
client is asked only by an input-required result, which it answers by calling again. So
the gateway holds the downstream call (a task of its own, in this process), answers the
client with the server's question as an input-required result (the gateway's sealed state
naming the held call, `HELD_PREFIX`), and on the retry gives the server the client's
answer and waits for what comes next: the result, or another question.

A held call lives in the process that holds it: a retry that lands on another worker
process or replica finds nothing and is refused (`errors.held_elsewhere`): the client calls
again without the state. A held call ends with the server's timeout, as any call does (a
question of it still waiting goes with it: its retry is refused as above); one its client
never comes back for is forgotten after the state's expiry; one whose client gives up on
its request (the request cancelled while the call runs) is cancelled, as a call not held
would be.

Bounded: a held call is no request in flight (the client's request ends with the
question), so neither a key's requests in flight nor the process's connections bound how
many a client leaves waiting, and a rate of 50 calls a second could leave thousands within
a server's timeout. A held call takes one of the process's `GatewayOptions.held_calls`
(256 by default: eight keys' worth of requests in flight, `key_max_in_flight`, far more
than people answering forms keep waiting at once, and each costs a task and a downstream
call in flight, its server's work included) at its server's first question, and gives it
back when it ends, however it ends (its result, its error, cancelled, or forgotten and
then ended by its server); one tenant's calls at most a quarter of them (`TENANT_SHARE`).
Past the bound the server's question is refused (`TOO_MANY`, `TOO_MANY_OF_THE_TENANT`,
as the SDK's client refuses a question, so the server answers as it answers such a
client), the operator told by a warning and `workbench_relay_bound_reached`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Coroutine
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream

from mcp_gateway.metatools.input_state import STATE_TTL
from mcp_gateway.observe.recorder import Recorder
from mcp_gateway.options import GatewayOptions
from mcp_gateway.snapshots.servers import ServerRef

logger = logging.getLogger("workbench.relay")

KEY = "ask"  # the one input request's key in the client's input-required result
HELD_PREFIX = "wb-held:"  # a sealed state naming a held call, not a server's own state
# What a server asking past the bound is answered (`downstream.server_questions`' texts).
TOO_MANY = (
    "Workbench cannot hold this call for its client's answer to this {method}: too many "
    "calls wait for input in this process; try again later"
)
TOO_MANY_OF_THE_TENANT = (
    "Workbench cannot hold this call for its client's answer to this {method}: too many "
    "of this tenant's calls wait for input in this process; try again later"
)
BOUND = "held_calls"  # the bound's name in the metric (the recorder's `relay_bound_reached`)
# One tenant holds at most this share of the process's bound (a quarter): one tenant's
# forgotten forms cannot refuse every other tenant's questions.
TENANT_SHARE = 4

Answer = types.InputResponse | types.ErrorData
# What the held call comes to next: the server's question (and where its answer goes), or
# the call's end (its answer, or the error it raised).
Question = tuple[types.InputRequest, MemoryObjectSendStream[Answer]]
Step = Question | tuple[Any, None]


class HeldCall:
    """One downstream call, run as a task of its own, whose questions wait for retries
    (made by `HeldCalls.call`, whose bound it counts against)."""

    def __init__(self, calls: HeldCalls, server: ServerRef) -> None:
        self.calls = calls
        self.server = server
        self._steps, self._next = anyio.create_memory_object_stream[Step](1)
        self._task: asyncio.Task[None] | None = None
        self._reply: MemoryObjectSendStream[Answer] | None = None  # its last question's
        self.waiting: str | None = None  # the id it waits under in `calls`, if it does
        self.ended = False

    def start(self, call: Coroutine[Any, Any, Any]) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(call))

    async def _run(self, call: Coroutine[Any, Any, Any]) -> None:
        try:
            try:
                done: Any = await call
            except Exception as exc:  # the caller's to raise
                done = exc
            # Not taken when its reader is gone (its request cancelled): nobody would be.
            with suppress(anyio.WouldBlock, anyio.BrokenResourceError):
                self._steps.send_nowait((done, None))
        finally:
            self.ended = True
            self._steps.close()
            if self._reply is not None:  # a question nobody will answer now
                self._reply.close()
            self.calls.ended(self)

    async def ask(self, request: types.InputRequest) -> Answer:
        """The connection's way to ask (`downstream.server_questions`): the question goes to
        the client's request, its answer comes with the retry; refused past the bound."""
        refused = self.calls.hold(self, request.method)
        if refused is not None:
            return types.ErrorData(
                code=types.INVALID_REQUEST, message=refused.format(method=request.method)
            )
        send, receive = anyio.create_memory_object_stream[Answer](1)
        self._reply = send
        await self._steps.send((request, send))
        async with receive:
            return await receive.receive()

    async def next(self) -> Step:
        """The server's next question, or the call's end (then nothing follows). Its
        request cancelled, the call is too: no retry could take what came next."""
        try:
            step = await self._next.receive()
        except anyio.get_cancelled_exc_class():
            if self._task is not None:
                self._task.cancel()
            raise
        if step[1] is None:
            self._next.close()
        return step

    @staticmethod
    def answer(reply: MemoryObjectSendStream[Answer], answer: Answer) -> None:
        """The client's answer to the question waiting at `reply`, if it still waits (the
        server's timeout may have ended the call: `next` then says so)."""
        dropped = (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.WouldBlock)
        with reply, suppress(*dropped):
            reply.send_nowait(answer)


@dataclass(slots=True)
class _Waiting:
    """A held call's question waiting for its client's retry."""

    held: HeldCall
    reply: MemoryObjectSendStream[Answer]
    owner: Any
    expiry: asyncio.TimerHandle


class HeldCalls:
    """This process's held calls: at most `limit` at once, those waiting for a retry by the
    id their sealed state names. `recorder`: the gateway's (the refusals' metric)."""

    def __init__(
        self,
        limit: int = GatewayOptions.held_calls,
        recorder: Recorder | None = None,
        ttl: float = STATE_TTL,
    ) -> None:
        self.limit = limit
        self.recorder = recorder or Recorder()
        self.ttl = ttl  # how long a question waits for its retry (the state's expiry)
        self._holding: set[HeldCall] = set()  # each from its first question to its end
        self._waiting: dict[str, _Waiting] = {}

    def call(self, server: ServerRef) -> HeldCall:
        """A call to `server` that its questions may hold."""
        return HeldCall(self, server)

    @property
    def holding(self) -> int:
        return len(self._holding)

    @property
    def tenant_limit(self) -> int:
        return max(1, self.limit // TENANT_SHARE)

    def hold(self, held: HeldCall, method: str) -> str | None:
        """None if `held` may wait for its client's answer (it holds a place already, or
        takes one of the bound's), else the refusal's text: the process's bound reached,
        or its tenant's share of it."""
        if held in self._holding:
            return None
        tenant = held.server.tenant
        if len(self._holding) >= self.limit:
            refused, whose, limit = TOO_MANY, "the", self.limit
        elif sum(h.server.tenant == tenant for h in self._holding) >= self.tenant_limit:
            refused, whose, limit = TOO_MANY_OF_THE_TENANT, "its tenant's", self.tenant_limit
        else:
            self._holding.add(held)
            return None
        logger.warning(
            "[%s] %s refused: %s calls waiting for input in this process are at their "
            "bound, %d (WORKBENCH_HELD_CALLS)",
            held.server,
            method,
            whose,
            limit,
        )
        self.recorder.relay_bound_reached(held.server, BOUND)
        return refused

    def ended(self, held: HeldCall) -> None:
        """`held` ended: its place is given back, and a question of it still waiting goes
        (a retry is refused as for a call held elsewhere)."""
        self._holding.discard(held)
        if held.waiting is not None:
            self._drop(held.waiting)

    def keep(self, held: HeldCall, reply: MemoryObjectSendStream[Answer], owner: Any) -> str:
        """The state the client brings back for `held`, whose question waits at `reply`;
        `owner`: whose call and which tool (`input_state.Bound`), checked again when it is
        taken (a server's own state could spell the prefix)."""
        found = uuid.uuid4().hex
        if not held.ended:  # else its end came first: the state names nothing
            expiry = asyncio.get_running_loop().call_later(self.ttl, self._forget, found)
            self._waiting[found] = _Waiting(held, reply, owner, expiry)
            held.waiting = found
        return HELD_PREFIX + found

    def _forget(self, found: str) -> None:
        """Nobody came back for the question: its call ends (the server's answer to that)."""
        waiting = self._waiting.pop(found, None)
        if waiting is not None:
            waiting.held.waiting = None
            waiting.reply.close()

    def _drop(self, found: str) -> None:
        waiting = self._waiting.pop(found, None)
        if waiting is not None:
            waiting.held.waiting = None
            waiting.expiry.cancel()

    def take(
        self, state: str, owner: Any
    ) -> tuple[HeldCall, MemoryObjectSendStream[Answer]] | None:
        found = state.removeprefix(HELD_PREFIX)
        waiting = self._waiting.get(found)
        if waiting is None or waiting.owner != owner:
            return None
        self._drop(found)
        return waiting.held, waiting.reply


def answer_of(responses: types.InputResponses | None) -> Answer:
    """The client's answer to the held call's question, or an error the server gets."""
    answer = (responses or {}).get(KEY)
    if answer is None:
        return types.ErrorData(code=types.INVALID_PARAMS, message="no answer to the question")
    return answer
