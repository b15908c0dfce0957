"""`open_toolbox` and `use_tool`: the spec's checks, in the spec's order, then the pool."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types

from mcp_gateway import errors, telemetry
from mcp_gateway.auth import Caller
from mcp_gateway.config import ServerConfig, ToolboxConfig
from mcp_gateway.connection import Connection, DownstreamFailure, PoolKey
from mcp_gateway.errors import ErrorCode, GatewayError
from mcp_gateway.pins_recorder import OfferRecorder
from mcp_gateway.pool import ConnectFailed, Pool
from mcp_gateway.ratelimit import LocalBuckets, RateLimiter
from mcp_gateway.schemas import (
    OPEN_TOOLBOX_INPUT_SCHEMA,
    USE_TOOL_INPUT_SCHEMA,
    parse_open_args,
    parse_use_args,
)
from mcp_gateway.sessions import OpenToolboxes

OPEN_TOOLBOX = types.Tool(
    name="open_toolbox",
    title="Open a toolbox",
    description=(
        "Open one of the toolboxes listed in this server's instructions: connects its "
        "servers and returns their tools (name, description, inputSchema, server). Call it "
        "before use_tool; opening an open toolbox again is cheap and returns the same list."
    ),
    input_schema=OPEN_TOOLBOX_INPUT_SCHEMA,
    annotations=types.ToolAnnotations(
        title="Open a toolbox", read_only_hint=True, idempotent_hint=True, open_world_hint=True
    ),
)

USE_TOOL = types.Tool(
    name="use_tool",
    title="Use a tool from an open toolbox",
    description=(
        "Call one tool from a toolbox opened with open_toolbox. Name it exactly as "
        "open_toolbox listed it: {toolbox, server, name}; pass its arguments (matching its "
        "inputSchema) as `arguments`. Returns the tool's own result."
    ),
    input_schema=USE_TOOL_INPUT_SCHEMA,
    annotations=types.ToolAnnotations(title="Use a tool", open_world_hint=True),
)

META_TOOLS = [OPEN_TOOLBOX, USE_TOOL]


@dataclass(frozen=True, slots=True)
class _Opened:
    toolbox: ToolboxConfig
    connections: tuple[Connection | str, ...]
    text: str
    result: dict[str, Any]


def error_result(error: GatewayError) -> types.CallToolResult:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text=error.message)],
        structured_content=error.as_structured(),
        is_error=True,
    )
    telemetry.gateway_error(result, error)  # the gateway's error, not the downstream's
    return result


def _tool_entry(tool: types.Tool, server: str, toolbox: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": tool.name}
    if tool.title is not None:
        entry["title"] = tool.title
    if tool.description is not None:
        entry["description"] = tool.description
    entry["inputSchema"] = tool.input_schema
    if tool.output_schema is not None:
        entry["outputSchema"] = tool.output_schema
    if tool.annotations is not None:
        entry["annotations"] = tool.annotations.model_dump(by_alias=True, exclude_none=True)
    entry["server"] = server
    entry["toolbox"] = toolbox
    return entry


class MetaTools:
    def __init__(
        self,
        pool: Pool,
        open_toolboxes: OpenToolboxes,
        limiter: RateLimiter | None = None,
        recorder: telemetry.Telemetry | None = None,
    ) -> None:
        self.pool = pool
        self.open_toolboxes = open_toolboxes
        self.limiter = limiter or RateLimiter(LocalBuckets(), None, None)
        self.telemetry = recorder or telemetry.Telemetry()
        self.offers = OfferRecorder()
        # What the last successful open of each toolbox returned, serialized once, and what
        # it was made from: the tenant's snapshot of the toolbox (its servers, filters and
        # approved pins; a new snapshot on any change) and the connections it listed.
        self._opened: dict[tuple[int, str], _Opened] = {}

    # open_toolbox

    async def open_toolbox(
        self, caller: Caller, arguments: dict[str, Any] | None
    ) -> types.CallToolResult:
        started = time.perf_counter()
        result = await self._open_toolbox(caller, arguments)
        self.telemetry.open_toolbox(caller, arguments, result, started)
        return result

    async def _open_toolbox(
        self, caller: Caller, arguments: dict[str, Any] | None
    ) -> types.CallToolResult:
        try:
            args = parse_open_args(arguments)
            toolbox = self._visible_toolbox(caller, args.toolbox)
            # Before any connection is made: opening is what starts processes.
            wait = await self.limiter.wait_for_open(caller.tenant.tenant_id, caller.key.key_id)
            if wait:
                raise errors.open_rate_limited(toolbox.name, wait)
            opened = self._reopened(caller, toolbox)
            if opened is None:
                opened = await self._open_and_list(caller, toolbox)
        except GatewayError as error:
            return error_result(error)
        telemetry.served_by(c.redact for c in opened.connections if isinstance(c, Connection))
        await self.open_toolboxes.mark_open(caller.owner, toolbox.name)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=opened.text)],
            structured_content=opened.result,
        )

    def _reopened(self, caller: Caller, toolbox: ToolboxConfig) -> _Opened | None:
        """The last open's answer, when the same snapshot's servers are all connected on
        the same connections: nothing it was made from has changed."""
        opened = self._opened.get((caller.tenant.tenant_id, toolbox.name))
        if opened is None or opened.toolbox is not toolbox:
            return None
        for server, conn in zip(toolbox.servers, opened.connections, strict=True):
            if self.pool.ready(self._pool_key(caller, toolbox, server), server) is not conn:
                return None
        return opened

    async def _open_and_list(self, caller: Caller, toolbox: ToolboxConfig) -> _Opened:
        outcomes: dict[str, Connection | str] = {}
        result = await self._open(caller, toolbox, outcomes)
        text = json.dumps(result, ensure_ascii=False)
        if len(text) > self.pool.max_result_bytes:
            raise errors.open_too_large(toolbox.name, len(text), self.pool.max_result_bytes)
        connections = tuple(outcomes[server.name] for server in toolbox.servers)
        opened = _Opened(toolbox, connections, text, result)
        if all(isinstance(conn, Connection) for conn in connections):  # no failure kept
            self._opened[(caller.tenant.tenant_id, toolbox.name)] = opened
        return opened

    def _visible_toolbox(self, caller: Caller, name: str) -> ToolboxConfig:
        available = caller.visible_toolboxes()
        toolbox = caller.tenant.toolbox(name)
        if toolbox is None:
            raise errors.toolbox_not_found(name, available)
        if not caller.key.allows(name):
            raise errors.forbidden(name, available)
        return toolbox

    async def _open(
        self, caller: Caller, toolbox: ToolboxConfig, outcomes: dict[str, Connection | str]
    ) -> dict[str, Any]:
        incidents: dict[str, str] = {}

        async def connect(server: ServerConfig) -> None:
            try:
                outcomes[server.name] = await self._connection(caller, toolbox, server)
            except ConnectFailed as exc:
                outcomes[server.name] = exc.reason
                if exc.incident:
                    incidents[server.name] = exc.incident

        async with anyio.create_task_group() as task_group:
            for server in toolbox.servers:
                task_group.start_soon(connect, server)

        tools: list[dict[str, Any]] = []
        failures: list[str] = []
        held: list[str] = []  # pinned tools waiting for an admin (mcp_gateway.pins)
        for server in toolbox.servers:
            outcome = outcomes[server.name]
            if isinstance(outcome, str):
                failures.append(errors.connect_failure_line(server.name, toolbox.name, outcome))
                continue
            offered = [tool for tool in outcome.tools if server.allows(tool.name)]
            waiting = server.pins.held_names(
                {tool.name: outcome.digests[tool.name] for tool in offered}, server.fingerprint
            )
            held.extend(errors.held_line(name, server.name) for name in sorted(waiting))
            tools.extend(
                _tool_entry(tool, server.name, toolbox.name)
                for tool in offered
                if tool.name not in waiting
            )
        if toolbox.servers and len(failures) == len(toolbox.servers):
            raise errors.open_failed(toolbox.name, failures, incidents)
        result: dict[str, Any] = {
            "toolbox": toolbox.name,
            "description": toolbox.description,
            "servers_connected": len(toolbox.servers) - len(failures),
            "tools": tools,
        }
        if failures:
            result["_errors"] = failures
        if held:
            result["_held"] = held
        if incidents:
            result["_incidents"] = incidents
        return result

    async def _connection(
        self, caller: Caller, toolbox: ToolboxConfig, server: ServerConfig
    ) -> Connection:
        key = self._pool_key(caller, toolbox, server)
        label = f"{caller.tenant.slug}/{toolbox.name}/{server.name}"
        conn = await self.pool.get(key, server, label, caller.tenant.max_connections)
        self.offers.observe(server, conn)  # pinning: what it offers, recorded once
        return conn

    @staticmethod
    def _pool_key(caller: Caller, toolbox: ToolboxConfig, server: ServerConfig) -> PoolKey:
        return PoolKey(caller.tenant.tenant_id, toolbox.name, server.name, server.fingerprint)

    # use_tool

    async def use_tool(
        self,
        caller: Caller,
        arguments: dict[str, Any] | None,
        progress_callback: Any = None,
    ) -> types.CallToolResult:
        started = time.perf_counter()
        result: types.CallToolResult | None = None
        try:
            result = await self._use_tool(caller, arguments, progress_callback)
        finally:  # a cancelled call is recorded too (result None)
            self.telemetry.use_tool(caller, arguments, result, started)
        return result

    async def _use_tool(
        self,
        caller: Caller,
        arguments: dict[str, Any] | None,
        progress_callback: Any = None,
    ) -> types.CallToolResult:
        try:
            args = parse_use_args(arguments)
            ref = args.tool
            toolbox = caller.tenant.toolbox(ref.toolbox)
            if toolbox is not None and not caller.key.allows(ref.toolbox):
                raise errors.forbidden(ref.toolbox, caller.visible_toolboxes())
            if toolbox is None or not await self.open_toolboxes.is_open(caller.owner, ref.toolbox):
                raise errors.toolbox_not_open(ref.toolbox)
            server = toolbox.server(ref.server)
            if server is None:
                raise errors.server_not_found(ref.server, toolbox.name)
            if not server.allows(ref.name):  # filtered out: no need to connect to say so
                raise errors.tool_not_found(ref.name, server.name, toolbox.name)
            # Before any connection is made.
            wait = await self.limiter.wait_for(caller.tenant.tenant_id, caller.key.key_id)
            if wait:
                raise errors.rate_limited(ref.name, server.name, toolbox.name, wait)
            try:
                conn = await self._connection(caller, toolbox, server)
            except ConnectFailed as exc:
                raise errors.downstream_failed(
                    ErrorCode.CONNECTION_FAILED,
                    ref.name,
                    server.name,
                    toolbox.name,
                    exc.reason,
                    exc.incident,
                ) from None
            telemetry.served_by([conn.redact])
            if not conn.has_tool(ref.name):
                raise errors.tool_not_found(ref.name, server.name, toolbox.name)
            if server.pins.held_digest(ref.name, conn.digests[ref.name], server.fingerprint):
                raise errors.tool_not_approved(ref.name, server.name, toolbox.name)
            try:
                return await conn.call_tool(
                    ref.name, args.arguments, progress_callback=progress_callback
                )
            except DownstreamFailure as exc:
                code = ErrorCode.TIMEOUT if exc.timed_out else ErrorCode.DOWNSTREAM_ERROR
                raise errors.downstream_failed(
                    code, ref.name, server.name, toolbox.name, exc.reason, exc.incident
                ) from None
        except GatewayError as error:
            return error_result(error)
