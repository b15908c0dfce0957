"""A 2025-11-25 client's answer to a server's question reaches the question it names: only
its own key's, in its own session, here or, through the shared store, in another
process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_gateway.front.questions import Questions, _answer_key, _question_key, answer_of
from mcp_gateway.front.request_state import RequestState
from mcp_gateway.snapshots.callers import Caller, KeyRecord
from mcp_gateway.snapshots.servers import TenantConfig

pytestmark = pytest.mark.anyio

TENANT = TenantConfig(1, "acme", True, 1, ())
QUESTION = "wb-0123"


def state(key_id: int, session: str | None) -> RequestState:
    key = KeyRecord(key_id, f"k{key_id}", "", 1, False, None, None, 1)
    return RequestState(Caller(key, TENANT), session)


def answer(question: object = QUESTION, **fields: Any) -> bytes:
    fields = fields or {"result": {"action": "accept"}}
    return json.dumps({"jsonrpc": "2.0", "id": question, **fields}).encode()


class Store:
    """The shared store as `Questions` uses it, in a dict."""

    def __init__(self) -> None:
        self.entries: dict[str, Any] = {}

    async def get(self, key: str, default: Any = None) -> Any:
        return self.entries.get(key, default)

    async def set(self, key: str, value: Any, timeout: float | None) -> None:
        self.entries[key] = value

    async def delete_many(self, keys: list[str]) -> None:
        for key in keys:
            self.entries.pop(key, None)


@pytest.mark.parametrize(
    ("body", "found"),
    [
        (answer(), (QUESTION, {"result": {"action": "accept"}})),
        (
            answer(error={"code": -1, "message": "no"}),
            (QUESTION, {"error": {"code": -1, "message": "no"}}),
        ),
        (answer(7), None),  # not one of the gateway's ids
        (answer("other-wb-1"), None),
        (b'{"jsonrpc": "2.0", "id": "wb-1", "method": "ping"}', None),  # a request
        (answer(result="text"), None),
        (b"wb-{", None),
    ],
)
def test_the_question_an_answer_names(body, found):
    assert answer_of(body) == found


async def test_an_answer_reaches_only_its_own_sessions_question():
    questions = Questions(Store())
    got: list[Any] = []
    questions._waiting[((1, "s1"), QUESTION)] = got.append
    assert not await questions.apply(state(2, "s1"), answer())  # another key
    assert not await questions.apply(state(1, "s2"), answer())  # another session
    assert not await questions.apply(state(1, None), answer())  # no session
    assert got == []
    assert await questions.apply(state(1, "s1"), answer())
    assert got == [{"action": "accept"}]


async def test_an_answer_to_another_processs_question_goes_through_the_store():
    store = Store()
    questions = Questions(store)  # this process asked nothing
    assert not await questions.apply(state(1, "s1"), answer())  # nobody asked it
    store.entries[_question_key("s1", QUESTION)] = 1  # asked by key 1, elsewhere
    assert not await questions.apply(state(2, "s1"), answer())  # another key's
    assert _answer_key("s1", QUESTION) not in store.entries
    assert await questions.apply(state(1, "s1"), answer())
    assert store.entries[_answer_key("s1", QUESTION)] == {"result": {"action": "accept"}}
