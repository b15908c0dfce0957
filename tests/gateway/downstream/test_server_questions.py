"""A 2025-11-25 server's request for input is answered for the one call in flight on its
connection, never guessed, and only for what the connection declared: each refusal's exact
text and code."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from mcp_gateway.downstream.server_questions import Asking, ServerQuestions

pytestmark = pytest.mark.anyio

FORM = types.ElicitRequestFormParams(message="Your name?", requested_schema={"type": "object"})
ANSWER = types.ElicitResult(action="accept", content={"name": "Ada"})


async def ask(request: types.InputRequest) -> types.InputResponse | types.ErrorData:
    return ANSWER


# What the connection declared at its initialize: the three, as a caller's set may.
DECLARED = {"elicitation": {}, "sampling": {}, "roots": {}}


def questions(*calls: Asking, declared: dict[str, Any] = DECLARED) -> ServerQuestions:
    return ServerQuestions("acme/dev/probe", lambda: list(calls), declared)


def refusal(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=message)


async def test_the_one_call_in_flight_is_asked():
    assert await questions(({"elicitation": {}}, ask)).elicit(None, FORM) == ANSWER


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        (
            (),
            "Workbench has no call in flight on its connection to this server to ask this "
            "elicitation/create for",
        ),
        (
            (({"elicitation": {}}, ask), ({"elicitation": {}}, ask)),
            "Workbench cannot tell which call this elicitation/create is for: 2 calls are in "
            "flight on its connection to this server",
        ),
        (((None, None),), "Elicitation not supported"),
        ((({"sampling": {}}, ask),), "Elicitation not supported"),
        ((({"elicitation": {}}, None),), "Elicitation not supported"),
    ],
)
async def test_a_request_that_cannot_be_asked_is_refused(calls: Any, message: str):
    assert await questions(*calls).elicit(None, FORM) == refusal(message)


async def test_sampling_and_roots_not_declared_get_the_sdk_clients_own_answers():
    sample = types.CreateMessageRequestParams(messages=[], max_tokens=1)
    assert await questions(({}, ask)).sample(None, sample) == refusal("Sampling not supported")
    assert await questions(({}, ask)).roots(None) == refusal("List roots not supported")


async def test_what_the_connection_did_not_declare_is_refused_whoever_asks():
    """The pool's base connection declares nothing: a server asking on it anyway is
    answered as the SDK's client answers, even for a call whose client declared it."""
    calls = ({"elicitation": {}}, ask)
    assert await questions(calls, declared={}).elicit(None, FORM) == refusal(
        "Elicitation not supported"
    )
    only_roots = questions(calls, declared={"roots": {}})
    assert await only_roots.elicit(None, FORM) == refusal("Elicitation not supported")
