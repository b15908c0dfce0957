"""`notifications/tools/list_changed` on the toolbox endpoint: on the streams 2026-07-28
clients open with `subscriptions/listen` (the SDK's `ListenHandler`, one per stream), and
on the GET streams 2025-11-25 clients open (`front.toolbox_stream`).

Each stream watches its toolbox's live connections: when one lists its server's tools again
(the server's own `list_changed`, `Connection.tools_version`) and what this endpoint lists
of that server for the caller changed (filters, holds and policies applied), the stream is
told. A server that stops (its idle end) is not a change: its tools come back with it. Both
kinds of stream count against one limit and end together as the process stops.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskStatus
from mcp.server import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

from mcp_gateway.metatools.toolbox_members import Member, ToolboxMembers
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ToolboxConfig

MAX_STREAMS = 1024  # streams open at once in this process, over every toolbox and both kinds
# ... and of one tenant's callers: one tenant's idle sessions cannot take every stream.
MAX_TENANT_STREAMS = 256
# How often a stream looks again without a listing to wake it: a server that started (or
# started again) since is watched from then on.
LOOK_AGAIN_SECONDS = 5.0
TOO_MANY_STREAMS = "Subscription limit reached"  # the SDK's own text for its own cap

Reach = Callable[[Caller, ToolboxConfig], Awaitable[list[Member]]]
View = list[dict[str, Any]]
Announce = Callable[[], Awaitable[None]]
PROCESS, TENANT = "process", "tenant"  # which limit refused a stream
Refused = str | None


class ToolboxChanges:
    """The toolbox endpoint's `subscriptions/listen` handler (`Server(on_subscriptions_listen=)`),
    the stream's toolbox told by `toolbox_of` (the request's path and credential)."""

    def __init__(
        self,
        members: ToolboxMembers,
        reach: Reach,
        toolbox_of: Callable[[ServerRequestContext[Any, Any]], tuple[Caller, ToolboxConfig]],
    ) -> None:
        self.members = members
        self.reach = reach
        self.toolbox_of = toolbox_of
        self.streams = 0
        self.limit = MAX_STREAMS
        self.tenant_limit = MAX_TENANT_STREAMS
        self._tenant_streams: dict[int, int] = {}
        self._open: set[Callable[[], None]] = set()  # how each open stream is ended

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        caller, toolbox = self.toolbox_of(ctx)
        bus = InMemorySubscriptionBus()
        stream = ListenHandler(bus, max_subscriptions=1)
        with self.held(stream.close, caller.tenant.tenant_id) as refused:
            if refused is not None:
                raise MCPError(types.INTERNAL_ERROR, TOO_MANY_STREAMS)
            announce = partial(bus.publish, ToolsListChanged())
            async with anyio.create_task_group() as group:
                group.start_soon(self.watch, caller, toolbox, announce)
                try:
                    ended = await stream(ctx, params)
                finally:
                    group.cancel_scope.cancel()
        return ended

    @contextmanager
    def held(self, end: Callable[[], None], tenant: int) -> Iterator[Refused]:
        """One stream's place under the limits, for as long as the block runs (or which
        limit left none: `PROCESS` or `TENANT`); `end` ends that stream gracefully when the
        process stops (`close`)."""
        if self.streams >= self.limit:
            yield PROCESS
            return
        if self._tenant_streams.get(tenant, 0) >= self.tenant_limit:
            yield TENANT
            return
        self.streams += 1
        self._tenant_streams[tenant] = self._tenant_streams.get(tenant, 0) + 1
        self._open.add(end)
        try:
            yield None
        finally:
            self.streams -= 1
            left = self._tenant_streams.pop(tenant) - 1
            if left:
                self._tenant_streams[tenant] = left
            self._open.discard(end)

    def close(self) -> None:
        """End every open stream gracefully (a listen's last frame its result, a GET
        stream's end its body's: the client knows it was ended, not lost)."""
        for end in list(self._open):
            end()

    async def watch(
        self,
        caller: Caller,
        toolbox: ToolboxConfig,
        announce: Announce,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Until cancelled (the stream's end): each change of a live server's tools as
        listed to this caller is announced once. Started (`task_status`) once it has seen
        what the caller is listed now: any change from then on is announced."""
        with suppress(MCPError):  # refused by the open rate limit: those up are watched
            await self.reach(caller, toolbox)  # started as a list would start them
        seen: dict[str, View] = {}
        looked: dict[str, tuple[Any, int]] = {}  # the connection and version each view is of
        first = True
        while True:
            live = self.members.live(caller, toolbox)
            changed = False
            for member in live:
                name, conn = member.server.name, member.conn
                assert conn is not None  # live members are connected
                if looked.get(name) == (conn, conn.tools_version):
                    continue  # nothing listed since: its view is the same
                looked[name] = (conn, conn.tools_version)
                now = self.view(member, caller, toolbox)
                changed |= not first and now != seen.get(name, [])
                seen[name] = now
            if first:
                task_status.started()
            first = False
            versions = [(m.conn, m.conn.tools_version) for m in live if m.conn is not None]
            if changed:
                await announce()
            with anyio.move_on_after(LOOK_AGAIN_SECONDS):
                await first_listing(versions)

    def view(self, member: Member, caller: Caller, toolbox: ToolboxConfig) -> View:
        tools = self.members.tools([member], caller, toolbox.name)
        return [tool.model_dump(mode="json", by_alias=True) for tool in tools]


async def first_listing(versions: list[tuple[Any, int]]) -> None:
    """Returns once one of these connections listed its tools again after its version (or
    ended); with none, never (the caller bounds the wait)."""
    if not versions:
        await anyio.sleep_forever()
    async with anyio.create_task_group() as group:

        async def one(conn: Any, version: int) -> None:
            await conn.listing_after(version)
            group.cancel_scope.cancel()

        for conn, version in versions:
            group.start_soon(one, conn, version)


def honest(capabilities: dict[str, Any]) -> dict[str, Any]:
    """What the endpoint announces, said truthfully: tools' `listChanged` (on 2026-07-28's
    listen streams, and on 2025-11-25's GET streams); never resources' or prompts' (their
    servers' changes are not relayed), nor resource subscriptions."""
    kept = dict(capabilities)
    if "tools" in kept:
        kept["tools"] = {**kept["tools"], "listChanged": True}
    for name in ("resources", "prompts"):
        if name in kept:
            kept[name] = {**kept[name], "listChanged": False}
    if "resources" in kept:
        kept["resources"] = {**kept["resources"], "subscribe": False}
    return kept
