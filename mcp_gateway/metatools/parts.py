"""What the meta-tools work with, as one value: the pool, the open state, the rate
limiter, the connected accounts, the tenants' known tools and the held calls' approvals
(the assembly makes it once; `MetaTools`, `ToolboxOpener`, `ToolUser` and `ToolSearcher`
each take it whole)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_gateway.downstream.connected.accounts import ConnectedAccounts
from mcp_gateway.downstream.pool import Pool
from mcp_gateway.metatools.approvals import ApprovalDoor
from mcp_gateway.metatools.held_calls import HeldCalls
from mcp_gateway.metatools.known_tools import KnownTools
from mcp_gateway.metatools.open_state import OpenToolboxes
from mcp_gateway.metatools.ratelimit import LocalBuckets, RateLimiter


def no_limits() -> RateLimiter:
    """A limiter that never waits (a meta-tool exercised without the gateway's options)."""
    return RateLimiter(LocalBuckets(), None, None)


@dataclass(frozen=True, slots=True)
class MetaToolParts:
    pool: Pool
    open_toolboxes: OpenToolboxes
    limiter: RateLimiter = field(default_factory=no_limits)
    accounts: ConnectedAccounts | None = None  # None: no server signs in (tests)
    known_tools: KnownTools | None = None  # None: an index of the pool's listings only
    approvals: ApprovalDoor | None = None  # None: a call a policy asks approval of is refused
    # Calls whose 2025-11-25 server asked a 2026-07-28 client for input (this process's).
    held_calls: HeldCalls = field(default_factory=HeldCalls)
