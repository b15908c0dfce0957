"""A server's question to a 2025-11-25 client during its call, and the client's answer led
back to the call, in this process or another.

On 2025-11-25 a server asks for input with a request during the call (`elicitation/create`,
`sampling/createMessage`, `roots/list`), which the gateway writes on the call's own SSE
response stream (the front door serves such a session's calls as streams). The SDK's
stateless transport refuses to (its `NoBackChannelError`): the client's answer comes as a
POST of its own, which it would hand to a fresh server that knows nothing of the call. So
the gateway opens the call's request channel for its own questions and catches the answers
at the front door (`apply`), before the SDK sees them (it still answers them: 202).

A question's id is the gateway's own (`wb-<random>`), unique, so an answer names its
question; it is found by the caller's key and session too, so another key or session naming
the id finds nothing. An answer that lands on another worker process or replica goes
through the shared store: the question is recorded there (with the key that may answer it)
and the asking process looks for the answer there while it waits, a few times a second.

SDK internals used (pinned by tests/gateway/observe/test_sdk_pins.py): the per-request
`DispatchContext` behind `ctx.session`, its `transport` and its dispatcher's
`_resolve_pending`.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import _JSONRPCDispatchContext
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, REQUEST_TIMEOUT, ErrorData
from mcp_types.methods import parse_client_result
from pydantic import ValidationError

from mcp_gateway.downstream.server_questions import AskClient
from mcp_gateway.front.request_state import RequestState
from mcp_gateway.metatools.input_state import STATE_TTL
from mcp_gateway.store.failure import StoreUnavailable

logger = logging.getLogger("workbench.relay")

QUESTION_ID_PREFIX = "wb-"
_MARKER = QUESTION_ID_PREFIX.encode()
# How often a process waiting for an answer looks in the shared store: first soon, then at
# most this often (an answer that lands on another process comes that much later).
STORE_POLL_FIRST = 0.02
STORE_POLL_MAX = 0.25
NO_BACK_CHANNEL = "this call has no stream to ask the client on"
NOT_ANSWERED = "the client did not answer {method} within {seconds:g}s"

Owner = tuple[int, str]  # (API key id, session id)
Outcome = dict[str, Any] | ErrorData  # what the SDK's dispatcher resolves a request with


def _question_key(session_id: str, question: str) -> str:
    return f"wb:question:{session_id}:{question}"


def _answer_key(session_id: str, question: str) -> str:
    return f"wb:answer:{session_id}:{question}"


def may_answer(body: bytes) -> bool:
    """Whether a POSTed body could answer one of the gateway's questions (most bodies
    cannot: a look for the id's prefix, before anything is parsed or awaited)."""
    return _MARKER in body


def answer_of(body: bytes) -> tuple[str, dict[str, Any]] | None:
    """The question id and the answer (`{"result": ...}` or `{"error": ...}`) a POSTed
    JSON-RPC response carries, when it answers one of the gateway's questions."""
    if not may_answer(body):
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" in message:
        return None
    question = message.get("id")
    if not isinstance(question, str) or not question.startswith(QUESTION_ID_PREFIX):
        return None
    if isinstance(message.get("result"), dict):
        return question, {"result": message["result"]}
    if isinstance(message.get("error"), dict):
        return question, {"error": message["error"]}
    return None


def _outcome(answer: dict[str, Any]) -> Outcome:
    if "result" in answer:
        result: dict[str, Any] = answer["result"]
        return result
    try:
        return ErrorData.model_validate(answer["error"])
    except ValidationError:
        return ErrorData(code=INTERNAL_ERROR, message="the client's error is not valid")


def _on_2025(request: types.InputRequest, question: str) -> dict[str, Any]:
    """The question as a 2025-11-25 request: a URL elicitation there names itself
    (`elicitationId`, required), which a server spoken to in 2026-07-28 does not send: the
    question's own id names it then."""
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    params: dict[str, Any] = data.get("params") or {}
    url = data["method"] == "elicitation/create" and params.get("mode") == "url"
    if url and not params.get("elicitationId"):
        params["elicitationId"] = question
    return data


class Questions:
    """The questions this process has asked of its clients, waiting for their answers."""

    def __init__(self, store: Any, answer_seconds: float = STATE_TTL) -> None:
        self.store = store
        self.answer_seconds = answer_seconds  # how long a client has to answer
        self._waiting: dict[tuple[Owner, str], Callable[[Outcome], None]] = {}

    def asker(self, ctx: ServerRequestContext[Any, Any], owner: Owner) -> AskClient:
        """How a server's question reaches the client of this call (`ctx`, a 2025-11-25
        call served as a stream) and its answer comes back."""

        async def ask(request: types.InputRequest) -> types.InputResponse | ErrorData:
            return await self.ask(ctx, owner, request)

        return ask

    async def ask(
        self, ctx: ServerRequestContext[Any, Any], owner: Owner, request: types.InputRequest
    ) -> types.InputResponse | ErrorData:
        """The client's answer, or its error (an `ErrorData`: the client refused, did not
        answer within `answer_seconds`, or answered nonsense)."""
        outbound = ctx.session._request_outbound  # the SDK's per-request channel
        if not isinstance(outbound, _JSONRPCDispatchContext):
            return ErrorData(code=INTERNAL_ERROR, message=NO_BACK_CHANNEL)
        if not outbound.transport.can_send_request:  # the gateway answers for the stream
            outbound.transport = replace(outbound.transport, can_send_request=True)
        question = f"{QUESTION_ID_PREFIX}{uuid.uuid4().hex}"
        entry = (owner, question)
        self._waiting[entry] = lambda outcome: outbound._dispatcher._resolve_pending(
            question, outcome
        )
        data = _on_2025(request, question)
        try:
            await self._record(owner, question)
            answer: dict[str, Any] | ErrorData | None = None
            async with anyio.create_task_group() as watching:
                watching.start_soon(self._watch_store, owner, question)
                try:
                    # The gateway's own deadline (the client is told the question is
                    # cancelled).
                    with anyio.move_on_after(self.answer_seconds):
                        try:
                            answer = await outbound.send_raw_request(
                                data["method"], data.get("params"), {"request_id": question}
                            )
                        except MCPError as exc:  # the client's error
                            answer = exc.error
                finally:
                    watching.cancel_scope.cancel()
        finally:
            del self._waiting[entry]
            await self._forget(owner, question)
        if answer is None:
            message = NOT_ANSWERED.format(method=request.method, seconds=self.answer_seconds)
            return ErrorData(code=REQUEST_TIMEOUT, message=message)
        if isinstance(answer, ErrorData):
            return answer
        try:
            parsed = parse_client_result(request.method, ctx.session.protocol_version, answer)
        except (ValidationError, KeyError, ValueError):
            return ErrorData(
                code=INVALID_PARAMS, message=f"the client's answer to {request.method} is not valid"
            )
        return parsed  # type: ignore[return-value]

    async def apply(self, state: RequestState, body: bytes) -> bool:
        """Lead a POSTed answer to the question it names, when this caller's session was
        asked it: to the call waiting here, or through the store to another process."""
        owner = state.owner
        if owner is None:
            return False
        found = answer_of(body)
        if found is None:
            return False
        question, answer = found
        resolve = self._waiting.get((owner, question))
        if resolve is not None:
            resolve(_outcome(answer))
            return True
        try:
            asked_by = await self.store.get(_question_key(owner[1], question))
            if asked_by != owner[0]:  # no such question, or another key's
                return False
            await self.store.set(_answer_key(owner[1], question), answer, self.answer_seconds)
        except StoreUnavailable:  # logged by the store; the call waits on, then times out
            return False
        return True

    async def _record(self, owner: Owner, question: str) -> None:
        try:
            await self.store.set(_question_key(owner[1], question), owner[0], self.answer_seconds)
        except StoreUnavailable:  # the answer can still land on this process
            logger.warning("question %s not recorded in the shared store", question)

    async def _forget(self, owner: Owner, question: str) -> None:
        keys = [_question_key(owner[1], question), _answer_key(owner[1], question)]
        with suppress(StoreUnavailable):  # else they expire
            await self.store.delete_many(keys)

    async def _watch_store(self, owner: Owner, question: str) -> None:
        """Until cancelled: an answer another process put in the store, handed to the call."""
        delay = STORE_POLL_FIRST
        key = _answer_key(owner[1], question)
        while True:
            await anyio.sleep(delay)
            delay = min(delay * 2, STORE_POLL_MAX)
            try:
                answer = await self.store.get(key)
            except StoreUnavailable:
                continue
            if isinstance(answer, dict):
                resolve = self._waiting.get((owner, question))
                if resolve is not None:
                    resolve(_outcome(answer))
                return
