"""The toolbox endpoint's GET stream, for 2025-11-25 clients: the revision's stream for
what a server sends unasked, on which this endpoint sends `notifications/tools/list_changed`
when what it lists for the caller changed (`ToolboxChanges.watch`, the listen streams'
watcher; the same limit, and ended as they are when the process stops).

The TypeScript SDK's client (and `mcp-remote`, which bundles it) opens this stream after
`notifications/initialized`, the Python SDK's once it has a session id: each took a 405
from this endpoint as "no stream here" until now. The stream is not resumable (no event
ids): a change made while a client reconnects is not announced to it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import suppress
from functools import partial

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.streamable_http import check_accept_headers
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from mcp_gateway.front.asgi import refusal
from mcp_gateway.front.toolbox_changes import TENANT, ToolboxChanges
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ToolboxConfig

NOT_ACCEPTABLE = "Not Acceptable: Client must accept text/event-stream"  # the SDK's text
TOO_MANY_STREAMS = (
    "This gateway process has {limit} streams open, its limit: this one is refused. "
    "Requests by POST are served as usual; list the tools again to see a change."
)
TOO_MANY_TENANT_STREAMS = (
    "This tenant has {limit} streams open on this gateway process, its limit: this one is "
    "refused. Requests by POST are served as usual; list the tools again to see a change."
)
STREAM_RETRY_SECONDS = 30
LIST_CHANGED = types.JSONRPCNotification(
    jsonrpc="2.0", method="notifications/tools/list_changed"
).model_dump_json(by_alias=True, exclude_unset=True)
# As the SDK's own streams: no caching or transforming proxy between (sse-starlette adds
# `X-Accel-Buffering: no` and a keep-alive comment every 15 seconds).
HEADERS = {"Cache-Control": "no-cache, no-transform", "Connection": "keep-alive"}


async def serve_stream(
    changes: ToolboxChanges,
    caller: Caller,
    toolbox: ToolboxConfig,
    scope: Scope,
    receive: Receive,
    send: Send,
) -> None:
    """Answer a GET of `toolbox` by `caller` (checked by `front.http` as a POST is): an SSE
    stream until the client goes or the process stops; refused past the limit."""
    if not check_accept_headers(Request(scope))[1]:
        await refusal(send, 406, "not_acceptable", NOT_ACCEPTABLE)
        return
    writer, reader = anyio.create_memory_object_stream[None](1)
    with writer, reader, changes.held(writer.close, caller.tenant.tenant_id) as refused:
        if refused is not None:
            retry = [(b"retry-after", str(STREAM_RETRY_SECONDS).encode())]
            if refused == TENANT:
                message = TOO_MANY_TENANT_STREAMS.format(limit=changes.tenant_limit)
            else:
                message = TOO_MANY_STREAMS.format(limit=changes.limit)
            await refusal(send, 503, "too_many_streams", message, retry)
            return
        async with anyio.create_task_group() as group:
            # Its first look done before the answer starts: a change the client makes
            # once it has the stream is announced.
            await group.start(changes.watch, caller, toolbox, partial(told, writer))
            response = EventSourceResponse(events(reader), headers=HEADERS)
            await response(scope, receive, send)
            group.cancel_scope.cancel()


async def told(writer: MemoryObjectSendStream[None]) -> None:
    """One change to send; one already waiting to be sent says it (its list is read
    afresh), and a stream ended takes none."""
    with suppress(anyio.WouldBlock, anyio.ClosedResourceError):
        writer.send_nowait(None)


async def events(reader: MemoryObjectReceiveStream[None]) -> AsyncIterator[dict[str, str]]:
    """Each change as the SDK's servers frame a message (`event: message`), until the
    stream is ended (`ToolboxChanges.close` closes its writer)."""
    async for _ in reader:
        yield {"event": "message", "data": LIST_CHANGED}
