"""What both meta-tools work with, as one value: the pool, the open state, the rate
limiter and the connected accounts (the assembly makes it once; `MetaTools`,
`ToolboxOpener` and `ToolUser` each take it whole)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_gateway.downstream.connected.accounts import ConnectedAccounts
from mcp_gateway.downstream.pool import Pool
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
