"""One toolbox as one MCP server (the toolbox endpoint): its servers connected as the
meta-tools connect them, their tools named `<server>__<tool>` (after filters and approval
holds, as `open_toolbox` lists them), their resources, templates and prompts joined in
toolbox order, and each URI, prompt or tool name led back to the server that owns it.

A tool call is not made here: it is `use_tool`'s (`ToolUser`), for the server and tool a
name leads to (`tool_ref`), with the toolbox counting as open (`ImplicitlyOpen`).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from mcp_gateway.downstream.connection import Connection
from mcp_gateway.downstream.failures import DownstreamFailure
from mcp_gateway.downstream.pool import ConnectFailed
from mcp_gateway.metatools import errors, policy
from mcp_gateway.metatools.connect import SignInRequired, connection, pool_key, served_key
from mcp_gateway.metatools.errors import ErrorCode, GatewayError
from mcp_gateway.metatools.open_state import OpenToolboxes
from mcp_gateway.metatools.parts import MetaToolParts
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ServerConfig, ToolboxConfig

logger = logging.getLogger("workbench.toolbox_endpoint")

SEPARATOR = "__"
MAX_NAME = 128  # the longest tool name clients take (and the spec's SHOULD)
MAX_PAGES = 100  # pages of one server's list read for one answer
T = TypeVar("T")


def prefixed(server: str, name: str) -> str:
    return f"{server}{SEPARATOR}{name}"


def unique(named: Sequence[tuple[str, T]]) -> list[tuple[str, T]]:
    """The entries whose name is at most MAX_NAME long and no other entry's: a name two
    servers would share, or one too long for clients, is left out (for both)."""
    refused = left_out(named)
    return [(name, item) for name, item in named if name not in refused]


def left_out(named: Sequence[tuple[str, Any]]) -> dict[str, str]:
    """The names `unique` leaves out, each with why (the admin's toolbox page says it)."""
    counts = Counter(name for name, _ in named)
    why: dict[str, str] = {}
    for name, _ in named:
        if len(name) > MAX_NAME:
            why[name] = f"longer than {MAX_NAME} characters"
        elif counts[name] > 1:
            why[name] = "the name of another tool of the toolbox too"
    return why


def tool_not_found(name: str, toolbox: str) -> GatewayError:
    """A name that leads to no server of the toolbox: use_tool's TOOL_NOT_FOUND, naming the
    toolbox where use_tool names the server."""
    return GatewayError(
        ErrorCode.TOOL_NOT_FOUND,
        f"Error executing tool: Tool '{name}' not found in toolbox '{toolbox}'",
        toolbox=toolbox,
        tool=name,
    )


class ImplicitlyOpen(OpenToolboxes):
    """The open state of the toolbox endpoint: its own toolbox is open to whoever may open
    it (the front has checked that before the request reached the SDK), and nothing is
    written to the shared store for it."""

    def __init__(self) -> None:  # no store: nothing is kept
        pass

    async def mark_open(self, owner: str, toolbox: str) -> None:
        return None

    async def is_open(self, owner: str, toolbox: str) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class Member:
    """One server of the toolbox, as this caller reaches it: `conn` its connection (None:
    not connected); `listed` the connection its tools are read from (another person's for a
    server each person signs in to, before this one has)."""

    server: ServerConfig
    conn: Connection | None
    listed: Connection | None

    def declares(self, capability: str) -> bool:
        capabilities = self.conn.capabilities if self.conn is not None else None
        return capabilities is not None and getattr(capabilities, capability) is not None


@dataclass(frozen=True, slots=True)
class _Listed:
    resources: list[types.Resource]
    templates: list[types.ResourceTemplate]


def template_pattern(template: str) -> re.Pattern[str]:
    """An RFC 6570 URI template as a pattern of the URIs it expands to: `{var}` one path
    segment, `{+var}` / `{#var}` anything, other operators any text without a slash."""
    parts: list[str] = []
    for index, piece in enumerate(re.split(r"(\{[^}]*\})", template)):
        if index % 2 == 0:
            parts.append(re.escape(piece))
        elif piece[1:2] in ("+", "#"):
            parts.append(".*")
        elif piece[1:2] in ("?", "&"):
            parts.append(r"(?:[?&][^#]*)?")
        else:
            parts.append("[^/?#]*")
    return re.compile("".join(parts))


class ToolboxMembers:
    def __init__(self, parts: MetaToolParts) -> None:
        self.pool = parts.pool
        self.accounts = parts.accounts
        self.limiter = parts.limiter
        # What each connection listed last (resources and templates): whose a URI is.
        self._listed: WeakKeyDictionary[Connection, _Listed] = WeakKeyDictionary()

    async def connect(
        self,
        caller: Caller,
        toolbox: ToolboxConfig,
        declared: Mapping[str, Any] | None = None,
    ) -> list[Member]:
        """Every server of the toolbox connected at once, in toolbox order, each on the
        connection a request of a client that declared `declared` (relayed capabilities)
        goes on (`connect.connection`: so it lists what the server offers such a client,
        and is asked as that client); one that fails is there unconnected (its failure is
        the pool's, logged where it happened). When a server is to be started (not one
        starting, nor one its failures' cooldown holds back), this is an open: held to
        open_toolbox's rate limit (GatewayError RATE_LIMITED before anything starts)."""
        found: dict[str, Member] = {}
        keys = [(served_key(self.pool, caller, toolbox, s, declared), s) for s in toolbox.servers]
        if any(self.pool.would_start(key, server) for key, server in keys):
            wait = await self.limiter.wait_for_open(
                caller.tenant.tenant_id, caller.key.key_id, caller.key.limits
            )
            if wait:
                raise errors.open_rate_limited(toolbox.name, wait)

        async def reach(server: ServerConfig) -> None:
            try:
                conn = await connection(self.pool, caller, toolbox, server, self.accounts, declared)
            except SignInRequired:
                listed = self.pool.anyones(pool_key(caller, toolbox, server))
                found[server.name] = Member(server, None, listed)
                return
            except ConnectFailed as exc:
                logger.info(
                    "[%s/%s/%s] not served on the toolbox endpoint: %s",
                    caller.tenant.slug,
                    toolbox.name,
                    server.name,
                    exc.reason,
                )
                found[server.name] = Member(server, None, None)
                return
            found[server.name] = Member(server, conn, conn)

        async with anyio.create_task_group() as group:
            for server in toolbox.servers:
                group.start_soon(reach, server)
        return [found[server.name] for server in toolbox.servers]

    def live(self, caller: Caller, toolbox: ToolboxConfig) -> list[Member]:
        """The toolbox's servers whose connections are up now, none started nor counted as
        used (what a watcher of their tools looks at)."""
        live = [(s, self.pool.live(pool_key(caller, toolbox, s))) for s in toolbox.servers]
        return [Member(server, conn, conn) for server, conn in live if conn is not None]

    # tools

    @staticmethod
    def offered(member: Member) -> list[types.Tool]:
        """The member's tools the toolbox exposes: its filter, then its approval holds."""
        conn, server = member.listed, member.server
        if conn is None:
            return []
        offered = [tool for tool in conn.tools if server.allows(tool.name)]
        held = server.pins.held_names(
            {tool.name: conn.digests[tool.name] for tool in offered}, server.fingerprint
        )
        return [tool for tool in offered if tool.name not in held]

    def tools(
        self, members: list[Member], caller: Caller | None = None, toolbox: str = ""
    ) -> list[types.Tool]:
        """`caller` (of `toolbox`): the tools a tool policy denies it left out
        (`metatools.policy`)."""
        named = [
            (prefixed(member.server.name, tool.name), tool)
            for member in members
            for tool in self.offered(member)
            if caller is None or policy.may_call_tool(caller, toolbox, member.server.name, tool)
        ]
        return [tool.model_copy(update={"name": name}) for name, tool in unique(named)]

    async def tool_ref(
        self,
        caller: Caller,
        toolbox: ToolboxConfig,
        name: str,
        declared: Mapping[str, Any] | None = None,
    ) -> tuple[str, str] | None:
        """The server and tool a listed name leads to (None: it leads nowhere). One server
        whose name it starts with: that server's (use_tool then checks the tool). Several:
        the one that offers the tool, if only one does."""
        if len(name) > MAX_NAME:
            return None
        candidates = [
            (server, name[len(server.name) + len(SEPARATOR) :])
            for server in toolbox.servers
            if name.startswith(server.name + SEPARATOR)
            and len(name) > len(server.name) + len(SEPARATOR)
        ]
        if len(candidates) <= 1:
            return next(((server.name, tool) for server, tool in candidates), None)
        members = {m.server.name: m for m in await self.connect(caller, toolbox, declared)}
        offering = [
            (server.name, tool)
            for server, tool in candidates
            if any(t.name == tool for t in self.offered(members[server.name]))
        ]
        if len(offering) > 1:
            return None  # a name two servers share is listed for neither
        return offering[0] if offering else (candidates[0][0].name, candidates[0][1])

    # resources

    async def _list_of(self, member: Member) -> _Listed:
        conn = member.conn
        if conn is None or not member.declares("resources"):
            return _Listed([], [])
        try:
            resources = await _all_pages(
                conn,
                lambda cursor: types.ListResourcesRequest(params=_page(cursor)),
                types.ListResourcesResult,
                lambda result: result.resources,
            )
            templates = await _all_pages(
                conn,
                lambda cursor: types.ListResourceTemplatesRequest(params=_page(cursor)),
                types.ListResourceTemplatesResult,
                lambda result: result.resource_templates,
            )
        except Exception as exc:  # a server that cannot list: its resources are not served
            logger.info("[%s] resources not listed: %r", conn.label, exc)
            return _Listed([], [])
        listed = _Listed(resources, templates)
        self._listed[conn] = listed
        return listed

    async def listed(self, members: list[Member]) -> list[tuple[Member, _Listed]]:
        found: dict[str, _Listed] = {}

        async def list_one(member: Member) -> None:
            found[member.server.name] = await self._list_of(member)

        async with anyio.create_task_group() as group:
            for member in members:
                group.start_soon(list_one, member)
        return [(member, found[member.server.name]) for member in members]

    async def resources(self, members: list[Member]) -> list[types.Resource]:
        """The union, in toolbox order: a URI two servers list is the first one's."""
        seen: set[str] = set()
        joined: list[types.Resource] = []
        for _, listed in await self.listed(members):
            for resource in listed.resources:
                if str(resource.uri) not in seen:
                    seen.add(str(resource.uri))
                    joined.append(resource)
        return joined

    async def templates(self, members: list[Member]) -> list[types.ResourceTemplate]:
        seen: set[str] = set()
        joined: list[types.ResourceTemplate] = []
        for _, listed in await self.listed(members):
            for template in listed.templates:
                if template.uri_template not in seen:
                    seen.add(template.uri_template)
                    joined.append(template)
        return joined

    async def owner_of(
        self, members: list[Member], uri: str, linked: str | None = None
    ) -> Member | None:
        """The server a URI is read from: the first (in toolbox order) that listed it, else
        the first whose template it fits, else the server `linked` (one whose tool result
        handed this caller the URI); None: no server of this toolbox offers it."""
        lists: list[tuple[Member, _Listed]] = []
        for member in members:
            known = self._listed.get(member.conn) if member.conn is not None else None
            lists.append((member, known if known is not None else await self._list_of(member)))
        for member, listed in lists:
            if any(str(resource.uri) == uri for resource in listed.resources):
                return member
        for member, listed in lists:
            if any(template_pattern(t.uri_template).fullmatch(uri) for t in listed.templates):
                return member
        if linked is not None:
            found = next((m for m in members if m.server.name == linked), None)
            if found is not None:
                return found
        # Listed before, maybe no longer: the servers' lists of now.
        fresh = [(m, await self._list_of(m)) for m in members]
        for member, listed in fresh:
            if any(str(resource.uri) == uri for resource in listed.resources):
                return member
        return None

    def template_owner(self, members: list[Member], template: str) -> Member | None:
        for member in members:
            listed = self._listed.get(member.conn) if member.conn is not None else None
            if listed is not None and any(t.uri_template == template for t in listed.templates):
                return member
        return None

    # prompts

    async def prompts(self, members: list[Member]) -> list[tuple[Member, types.Prompt]]:
        """Each prompt named `<server>__<prompt>` (too long or shared names left out)."""
        found: dict[str, list[types.Prompt]] = {}

        async def list_one(member: Member) -> None:
            found[member.server.name] = []
            conn = member.conn
            if conn is None or not member.declares("prompts"):
                return
            try:
                found[member.server.name] = await _all_pages(
                    conn,
                    lambda cursor: types.ListPromptsRequest(params=_page(cursor)),
                    types.ListPromptsResult,
                    lambda result: result.prompts,
                )
            except Exception as exc:
                logger.info("[%s] prompts not listed: %r", conn.label, exc)

        async with anyio.create_task_group() as group:
            for member in members:
                group.start_soon(list_one, member)
        named = [
            (prefixed(member.server.name, prompt.name), (member, prompt))
            for member in members
            for prompt in found[member.server.name]
        ]
        return [
            (member, prompt.model_copy(update={"name": name}))
            for name, (member, prompt) in unique(named)
        ]

    async def prompt_owner(self, members: list[Member], name: str) -> tuple[Member, str] | None:
        """The server and its own name of a listed prompt name."""
        for member, prompt in await self.prompts(members):
            if prompt.name == name:
                return member, name[len(member.server.name) + len(SEPARATOR) :]
        return None


def _page(cursor: str | None) -> types.PaginatedRequestParams | None:
    return types.PaginatedRequestParams(cursor=cursor) if cursor else None


ListResult = TypeVar("ListResult", bound=types.PaginatedResult)


async def _all_pages(
    conn: Connection,
    request: Callable[[str | None], Any],
    result_type: type[ListResult],
    items: Callable[[ListResult], list[T]],
) -> list[T]:
    found: list[T] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        result = await conn.request(request(cursor), result_type)
        found.extend(items(result))
        cursor = result.next_cursor
        if not cursor:
            break
    return found


async def forwarded(conn: Connection, request: Any, result_type: Any, **relay: Any) -> Any:
    """A request passed to the member's server (`relay`: `Connection.request`'s, what
    passes through besides the result: `member_requests`): its own JSON-RPC error as it
    came, a failure of the gateway's as an MCPError with the classified phrase."""
    try:
        return await conn.request(request, result_type, **relay)
    except DownstreamFailure as exc:
        data = {"incident": exc.incident} if exc.incident else None
        raise MCPError(types.INTERNAL_ERROR, exc.reason, data) from None
