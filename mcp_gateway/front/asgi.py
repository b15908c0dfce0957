"""Small ASGI pieces of the front door: a request body read within a bound and replayed,
JSON answers, a watch for the client going away, and the Mcp-Session-Id an `initialize`
gets."""

from __future__ import annotations

import json
import logging
import uuid
from collections import deque
from collections.abc import Sequence
from typing import Any

import anyio
from mcp.server.streamable_http import check_accept_headers
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from mcp_gateway.front.request_state import RequestState

logger = logging.getLogger("workbench.auth")

SESSION_HEADER = b"mcp-session-id"
# A body that may ask for progress or log messages: the keys themselves, or any JSON escape
# (which could spell them). Such a request is answered as an SSE stream, so that its
# progress and log messages can come on it.
PROGRESS_MARKERS = (b"progressToken", b"io.modelcontextprotocol/logLevel", b"\\u")
# A request whose answer is a stream of notifications (2026-07-28's listen): SSE only.
STREAMED_MARKERS = (b"subscriptions/listen",)


async def read_body(receive: Receive, limit: int) -> tuple[list[Message], bool]:
    """The request's messages up to the end of its body (True), or up to the first one
    past `limit` bytes or not a body (False): at most `limit` plus one message in memory."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, False
        size += len(message.get("body", b""))
        if size > limit:
            return messages, False
        if not message.get("more_body", False):
            return messages, True


def replay(messages: list[Message], receive: Receive) -> Receive:
    pending = deque(messages)

    async def replayed() -> Message:
        return pending.popleft() if pending else await receive()

    return replayed


def answers_as_json(scope: Scope, body: bytes) -> bool:
    """Whether a plain JSON body may answer this POST: the client accepts both forms (so
    refusals stay the SSE transport's own) and its request cannot ask for progress."""
    has_json, has_sse = check_accept_headers(Request(scope))
    markers = (*PROGRESS_MARKERS, *STREAMED_MARKERS)
    return has_json and has_sse and not any(marker in body for marker in markers)


# Refused before MCP: the HTTP status and headers say how, the body says why, as a JSON-RPC
# error. The SDK's (2.x) client reads a non-2xx JSON body that is a JSON-RPC error and hands
# it to its user (mcp/client/streamable_http.py), where any other body becomes its generic
# "Server returned an error response"; its `id` is null (the request's body is not read
# before it is refused), which the client replaces with its own request's id.
INVALID_REQUEST = -32600  # JSON-RPC's own, for a request the gateway cannot take (400)
# Every other refusal: the reason is in `data.reason`. Implementation-defined (-32000 to
# -32019), and none of the SDK's own (-32000 closed, -32001 its local timeout).
REFUSED = -32010


def refusal_body(status: int, reason: str, message: str, **data: Any) -> dict[str, Any]:
    code = INVALID_REQUEST if status == 400 else REFUSED
    error = {"code": code, "message": message, "data": {"reason": reason, **data}}
    return {"jsonrpc": "2.0", "id": None, "error": error}


async def refusal(
    send: Send,
    status: int,
    reason: str,
    message: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
    **data: Any,
) -> None:
    """Refuse a request to /mcp: `reason` is the machine's word, `message` the person's."""
    await json_response(send, status, refusal_body(status, reason, message, **data), headers)


async def json_response(
    send: Send, status: int, body: dict[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


async def until_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel `scope` when the client goes away (uvicorn also says so once the response is
    complete): what an SSE response does for its request, done for a JSON one."""
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    except Exception:  # the server's receive failed: the request ends with its scope
        logger.debug("receive failed while waiting for a disconnect", exc_info=True)
    scope.cancel()


def with_new_session_id(send: Send, state: RequestState) -> Send:
    """`send`, adding a new Mcp-Session-Id to a successful answer (an `initialize`)."""
    session_id = uuid.uuid4().hex.encode()
    state.new_session_id = session_id.decode()  # where the client's name is kept

    async def send_with_session(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 200:
            message = {
                **message,
                "headers": [*message.get("headers", []), (SESSION_HEADER, session_id)],
            }
        await send(message)

    return send_with_session
