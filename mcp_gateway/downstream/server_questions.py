"""A server spoken to in 2025-11-25 asks for input with a request on its connection
(`elicitation/create`, `sampling/createMessage`, `roots/list`), not with an input-required
result; the connection answers it for the call it belongs to.

A connection declares one set of capabilities at its `initialize` (`envelope`): the pool's
base connection of a server none, the pool's connection for a caller's declared set that
set, so that a server that asks only a client that declared the capability (else falls
back) treats each caller as it would directly. What the connection did not declare is
answered as not declared, whoever's call is in flight.
A request from the server carries no tie to the call that caused it, so it is the one call
in flight on the connection's (a toolbox endpoint's resource, prompt or completion
request counts, and its client is asked as a call's is: `metatools.member_requests`), or
nobody's: with none (`NO_CALL`) or several (`CANNOT_TELL`) in flight the gateway does not
guess, and answers with an error saying so. The call's client is asked when it declared
the capability: a 2025-11-25 client on its call's stream (`front.questions`), a
2026-07-28 client by an input-required result while the call is held for its retry
(`metatools.held_calls`); a client that declared nothing (or one that cannot be asked: a
2026-07-28 client of a toolbox endpoint's request other than a tool call) gets the answer
the SDK's own client gives then (`NOT_DECLARED`, so the server answers as it answers a
client that refuses).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp_types import INVALID_REQUEST, ErrorData

# Asks the calling client a server's question: its answer, or its error (a 2025-11-25
# client's, on its call's stream: `front.questions`).
AskClient = Callable[[types.InputRequest], Awaitable[types.InputResponse | ErrorData]]

logger = logging.getLogger("workbench.downstream")

NO_CALL = (
    "Workbench has no call in flight on its connection to this server to ask this {method} for"
)
CANNOT_TELL = (
    "Workbench cannot tell which call this {method} is for: {count} calls are in flight on "
    "its connection to this server"
)
# What the SDK's client answers a request it declared no callback for (mcp.client.session).
NOT_DECLARED = {
    "elicitation": "Elicitation not supported",
    "sampling": "Sampling not supported",
    "roots": "List roots not supported",
}

# A call in flight: what its client declared (`envelope.relayed`) and how to ask it.
Asking = tuple[Mapping[str, Any] | None, AskClient | None]


class ServerQuestions:
    """The connection's callbacks for a server's requests (`ClientSession` takes them)."""

    def __init__(
        self,
        label: str,
        in_flight: Callable[[], list[Asking]],
        declared: Mapping[str, Any],
    ) -> None:
        self.label = label
        self.in_flight = in_flight  # the calls in flight on the connection, now
        self.declared = declared  # what the connection declared at its initialize

    async def _ask(
        self, capability: str, request: types.InputRequest
    ) -> types.InputResponse | ErrorData:
        if capability not in self.declared:  # a server that asks anyway: as the SDK's client
            return ErrorData(code=INVALID_REQUEST, message=NOT_DECLARED[capability])
        calls = self.in_flight()
        if not calls:
            logger.info("[%s] %s not relayed: no call in flight", self.label, request.method)
            return ErrorData(code=INVALID_REQUEST, message=NO_CALL.format(method=request.method))
        if len(calls) != 1:
            logger.info(
                "[%s] %s not relayed: %d calls in flight", self.label, request.method, len(calls)
            )
            message = CANNOT_TELL.format(method=request.method, count=len(calls))
            return ErrorData(code=INVALID_REQUEST, message=message)
        declared, ask = calls[0]
        if ask is None or declared is None or capability not in declared:
            return ErrorData(code=INVALID_REQUEST, message=NOT_DECLARED[capability])
        return await ask(request)

    async def elicit(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | ErrorData:
        answer = await self._ask("elicitation", types.ElicitRequest(params=params))
        return answer if isinstance(answer, types.ElicitResult | ErrorData) else _odd(answer)

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | ErrorData:
        answer = await self._ask("sampling", types.CreateMessageRequest(params=params))
        kinds = types.CreateMessageResult | types.CreateMessageResultWithTools | ErrorData
        return answer if isinstance(answer, kinds) else _odd(answer)

    async def roots(self, context: Any) -> types.ListRootsResult | ErrorData:
        answer = await self._ask("roots", types.ListRootsRequest())
        return answer if isinstance(answer, types.ListRootsResult | ErrorData) else _odd(answer)


def _odd(answer: object) -> ErrorData:
    """A client's answer of another kind than asked (its own SDK checked it: not seen)."""
    return ErrorData(code=INVALID_REQUEST, message=f"the client answered {type(answer).__name__}")
