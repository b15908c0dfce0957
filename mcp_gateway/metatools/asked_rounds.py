"""A server's input-required result asked of a 2025-11-25 client, round by round.

A server spoken to in 2026-07-28 asks for input with an input-required result; a client
speaking 2025-11-25 cannot take one, so the gateway asks it each question during its
request (on its stream: `front.questions`) and sends the request again with its answers
and the server's own state, until the server answers, at most the SDK's client's rounds.
The loop is the SDK's own (`run_input_required_driver`); a tool call (`use_tool`) and a
toolbox endpoint's other requests (`member_requests`) share it here, each mapping its
failures to its own error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import mcp_types as types
from mcp.client._input_required import (
    InputRequiredRoundsExceededError,
    run_input_required_driver,
)

from mcp_gateway.downstream.server_questions import AskClient

T = TypeVar("T")
# What a request's failure says once the server asked more than the SDK's client allows.
TOO_MANY_ROUNDS = "the server asked for input more than {rounds} times in one {request}"

Retry = Callable[
    [types.InputResponses | None, str | None], Awaitable[T | types.InputRequiredResult]
]


class TooManyRounds(Exception):
    """The server kept asking past the SDK client's rounds."""

    def __init__(self, rounds: int) -> None:
        super().__init__(rounds)
        self.rounds = rounds

    def text(self, request: str) -> str:
        """The failure's text for `request` (a "call", a "request")."""
        return TOO_MANY_ROUNDS.format(rounds=self.rounds, request=request)


async def asked_until_answered(
    ask: AskClient, first: types.InputRequiredResult, retry: Retry[T]
) -> T:
    """The server's answer once the client answered every question `first` and the
    results after it asked; the client's error (an MCPError) ends it as the server's own
    would, TooManyRounds past the SDK's bound."""

    async def dispatch(
        key: str, request: types.InputRequest
    ) -> types.InputResponse | types.ErrorData:
        return await ask(request)

    try:
        return await run_input_required_driver(first, dispatch=dispatch, retry=retry)
    except InputRequiredRoundsExceededError as exc:
        raise TooManyRounds(exc.max_rounds) from None
