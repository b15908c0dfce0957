"""The three meta-tools together, over one `MetaToolParts` (one pool, one open state, one
rate limiter, the connected accounts, the tenants' known tools)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.shared.dispatcher import ProgressFnT

from mcp_gateway.metatools.known_tools import KnownTools
from mcp_gateway.metatools.open_toolbox import ToolboxOpener
from mcp_gateway.metatools.parts import MetaToolParts
from mcp_gateway.metatools.search_tools import ToolSearcher
from mcp_gateway.metatools.use_tool import ToolCall, ToolUser
from mcp_gateway.observe.outcome import Outcome
from mcp_gateway.snapshots.callers import Caller


class MetaTools:
    def __init__(self, parts: MetaToolParts) -> None:
        self.parts = parts
        self.opener = ToolboxOpener(parts)
        self.user = ToolUser(parts)
        self.searcher = ToolSearcher(parts, parts.known_tools or KnownTools(parts.pool))

    async def open_toolbox(
        self,
        caller: Caller,
        arguments: dict[str, Any] | None,
        declared: Mapping[str, Any] | None = None,
    ) -> Outcome:
        return await self.opener(caller, arguments, declared)

    async def search_tools(self, caller: Caller, arguments: dict[str, Any] | None) -> Outcome:
        return await self.searcher(caller, arguments)

    async def use_tool(
        self, call: ToolCall, progress_callback: ProgressFnT | None = None
    ) -> Outcome:
        """`call` named by the front (`ToolCall.of`), which records its outcome, even a
        cancelled call's, from it."""
        return await self.user(call, progress_callback)
