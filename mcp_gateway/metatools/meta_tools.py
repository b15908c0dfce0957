"""The two meta-tools together, sharing one pool, one open state and one rate limiter."""

from __future__ import annotations

from typing import Any

from mcp_gateway.downstream.connected.accounts import ConnectedAccounts
from mcp_gateway.downstream.pool import Pool
from mcp_gateway.metatools.open_state import OpenToolboxes
from mcp_gateway.metatools.open_toolbox import ToolboxOpener
from mcp_gateway.metatools.ratelimit import LocalBuckets, RateLimiter
from mcp_gateway.metatools.use_tool import ToolCall, ToolUser
from mcp_gateway.observe.outcome import Outcome
from mcp_gateway.snapshots.callers import Caller


class MetaTools:
    def __init__(
        self,
        pool: Pool,
        open_toolboxes: OpenToolboxes,
        limiter: RateLimiter | None = None,
        accounts: ConnectedAccounts | None = None,
    ) -> None:
        self.pool = pool
        self.open_toolboxes = open_toolboxes
        self.limiter = limiter or RateLimiter(LocalBuckets(), None, None)
        self.accounts = accounts
        self.opener = ToolboxOpener(pool, open_toolboxes, self.limiter, accounts)
        self.user = ToolUser(pool, open_toolboxes, self.limiter, accounts)

    async def open_toolbox(self, caller: Caller, arguments: dict[str, Any] | None) -> Outcome:
        return await self.opener(caller, arguments)

    async def use_tool(
        self, caller: Caller, arguments: dict[str, Any] | None, progress_callback: Any = None
    ) -> Outcome:
        return await self.user(ToolCall.of(caller, arguments), progress_callback)
