"""`open_toolbox`: the contract's checks, in its order, then every server of the toolbox
connected at once, and the tools they offer listed (after filters and pinning).

A server spoken to in 2025-11-25 may offer some tools only to a client that declared a
capability (server-everything's `trigger-elicitation-request`): the tools listed are
those of the connection the caller's calls go on (`connect.connection` with its declared
set), so that it sees what it would see connected directly, no more."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types

from mcp_gateway.downstream.connection import Connection
from mcp_gateway.downstream.envelope import canonical
from mcp_gateway.downstream.pool import ConnectFailed
from mcp_gateway.metatools import errors, policy
from mcp_gateway.metatools.connect import SignInRequired, connection, pool_key, ready
from mcp_gateway.metatools.errors import GatewayError
from mcp_gateway.metatools.parts import MetaToolParts
from mcp_gateway.metatools.schemas import named_toolbox, parse_open_args
from mcp_gateway.metatools.tools import failed, tool_entry
from mcp_gateway.observe.outcome import Outcome
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ServerConfig, ToolboxConfig


@dataclass(frozen=True, slots=True)
class _Opened:
    toolbox: ToolboxConfig
    connections: tuple[Connection | str, ...]
    text: str
    result: dict[str, Any]
    # Each connection's `tools_version` when listed: a server's `list_changed` makes a new
    # listing, and this answer stale.
    versions: tuple[int, ...] = ()


def visible_toolbox(caller: Caller, name: str, toolbox: ToolboxConfig | None) -> ToolboxConfig:
    """The toolbox `name` names (`toolbox`, None: none of the tenant's), if this credential
    may open it: else TOOLBOX_NOT_FOUND, or FORBIDDEN for a key or grant limited to others."""
    if toolbox is None:
        raise errors.toolbox_not_found(name, caller.visible_toolboxes())
    if not caller.key.allows(name):
        raise errors.forbidden(name, caller.visible_toolboxes())
    return toolbox


def _cache_key(
    caller: Caller, toolbox: ToolboxConfig, declared: Mapping[str, Any] | None
) -> tuple[int, str, str]:
    return (caller.tenant.tenant_id, toolbox.name, canonical(declared) if declared else "")


class ToolboxOpener:
    def __init__(self, parts: MetaToolParts) -> None:
        self.accounts = parts.accounts
        self.pool = parts.pool
        self.open_toolboxes = parts.open_toolboxes
        self.limiter = parts.limiter
        # What the last successful open of each toolbox for each declared set returned,
        # serialized once, and what it was made from: the tenant's snapshot of the toolbox
        # (its servers, filters and approved pins; a new snapshot on any change), the
        # connections it listed and the version of each one's tools.
        self._opened: dict[tuple[int, str, str], _Opened] = {}

    async def __call__(
        self,
        caller: Caller,
        arguments: dict[str, Any] | None,
        declared: Mapping[str, Any] | None = None,
    ) -> Outcome:
        """`declared`: the calling client's relayed capabilities, as a `use_tool` of its
        carries them (`ToolCall.capabilities`); None: it declared none."""
        named = named_toolbox(arguments)
        toolbox = caller.tenant.toolbox(named.toolbox) if named.toolbox else None
        try:
            args = parse_open_args(arguments)
            toolbox = visible_toolbox(caller, args.toolbox, toolbox)
            # Before any connection is made: opening is what starts processes.
            wait = await self.limiter.wait_for_open(
                caller.tenant.tenant_id, caller.key.key_id, caller.key.limits
            )
            if wait:
                raise errors.open_rate_limited(toolbox.name, wait)
            opened = self.reopened(caller, toolbox, declared)
            if opened is None:
                opened = await self._open_and_list(caller, toolbox, declared)
        except GatewayError as error:
            return failed(error, named, toolbox)
        await self.open_toolboxes.mark_open(caller.owner, toolbox.name)
        text, listed, decision = opened.text, opened.result, ""
        callable_tools = policy.callable_entries(caller, listed["tools"])
        if callable_tools is not None:  # after the cache: one caller's view is never another's
            decision = policy.left_out(listed["tools"], callable_tools)
            listed = {**listed, "tools": callable_tools}
            text = json.dumps(listed, ensure_ascii=False)
        result = types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=listed,
        )
        served = tuple(c.redact for c in opened.connections if isinstance(c, Connection))
        return Outcome(result, named, toolbox, redactors=served, decision=decision)

    def reopened(
        self, caller: Caller, toolbox: ToolboxConfig, declared: Mapping[str, Any] | None = None
    ) -> _Opened | None:
        """The last open's answer for the declared set, when the same snapshot's servers
        are all connected on the same connections, their tools listed no more since:
        nothing it was made from has changed."""
        opened = self._opened.get(_cache_key(caller, toolbox, declared))
        if opened is None or opened.toolbox is not toolbox:
            return None
        for server, conn, version in zip(
            toolbox.servers, opened.connections, opened.versions, strict=True
        ):
            if ready(self.pool, caller, toolbox, server, declared) is not conn:
                return None
            if not isinstance(conn, Connection) or conn.tools_version != version:
                return None
        return opened

    async def _open_and_list(
        self, caller: Caller, toolbox: ToolboxConfig, declared: Mapping[str, Any] | None
    ) -> _Opened:
        outcomes: dict[str, Connection | str] = {}
        versions: dict[str, int] = {}
        result = await self._open(caller, toolbox, outcomes, versions, declared)
        text = json.dumps(result, ensure_ascii=False)
        if len(text) > self.pool.max_result_bytes:
            raise errors.open_too_large(toolbox.name, len(text), self.pool.max_result_bytes)
        connections = tuple(outcomes[server.name] for server in toolbox.servers)
        listed = tuple(versions.get(server.name, -1) for server in toolbox.servers)
        opened = _Opened(toolbox, connections, text, result, listed)
        if all(isinstance(conn, Connection) for conn in connections):  # no failure kept
            self._opened[_cache_key(caller, toolbox, declared)] = opened
        return opened

    async def _open(
        self,
        caller: Caller,
        toolbox: ToolboxConfig,
        outcomes: dict[str, Connection | str],
        versions: dict[str, int],
        declared: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        incidents: dict[str, str] = {}
        connect_urls: dict[str, str] = {}

        async def connect(server: ServerConfig) -> None:
            try:
                outcomes[server.name] = await connection(
                    self.pool, caller, toolbox, server, self.accounts, declared
                )
            except SignInRequired as exc:
                # Its tools as another person's connection lists them (use_tool then asks
                # this caller to sign in); none yet: its link where an incident would be.
                listed = self.pool.anyones(pool_key(caller, toolbox, server))
                if listed is not None:
                    outcomes[server.name] = listed
                    return
                outcomes[server.name] = errors.sign_in_first(server.name, exc.url)
                incidents[server.name] = connect_urls[server.name] = exc.url
            except ConnectFailed as exc:
                outcomes[server.name] = exc.reason
                if exc.incident:
                    incidents[server.name] = exc.incident

        async with anyio.create_task_group() as task_group:
            for server in toolbox.servers:
                task_group.start_soon(connect, server)

        tools: list[dict[str, Any]] = []
        failures: list[str] = []
        held: list[str] = []  # pinned tools waiting for an admin (kernel.pins)
        for server in toolbox.servers:
            outcome = outcomes[server.name]
            if isinstance(outcome, str):
                failures.append(errors.connect_failure_line(server.name, toolbox.name, outcome))
                continue
            # One listing's tools and digests, read together (no await between them).
            versions[server.name] = outcome.tools_version
            listed, digests = outcome.tools, outcome.digests
            offered = [tool for tool in listed if server.allows(tool.name)]
            waiting = server.pins.held_names(
                {tool.name: digests[tool.name] for tool in offered}, server.fingerprint
            )
            held.extend(errors.held_line(name, server.name) for name in sorted(waiting))
            tools.extend(
                tool_entry(tool, server.name, toolbox.name)
                for tool in offered
                if tool.name not in waiting
            )
        if toolbox.servers and len(failures) == len(toolbox.servers):
            raise errors.open_failed(toolbox.name, failures, incidents, connect_urls)
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
