"""Token buckets for `use_tool`, per tenant and per API key.

With Redis as the shared store (CACHE_URL), both buckets live there and are checked and
taken in one atomic script, on Redis's clock, so the limits hold across gateway
processes. With a local-memory cache (one process) they live in this process.
A bucket holds up to `burst` calls and refills at `rate` calls per second.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_gateway.store import redis_url


@dataclass(frozen=True)
class Limit:
    rate: float  # calls per second
    burst: int

    @classmethod
    def parse(cls, rate: float, burst: int) -> Limit | None:
        return cls(rate, max(1, burst or int(rate) or 1)) if rate > 0 else None


class Buckets(Protocol):
    async def take(self, buckets: list[tuple[str, Limit]]) -> float:
        """Take one token from every bucket, or none: 0, or the seconds to wait."""
        ...

    async def close(self) -> None: ...


class LocalBuckets:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock  # injectable, so tests need not race the refill
        self._state: dict[str, tuple[float, float]] = {}  # name: (tokens, at)

    async def take(self, buckets: list[tuple[str, Limit]]) -> float:
        now = self._clock()
        levels = {}
        wait = 0.0
        for name, limit in buckets:
            tokens, at = self._state.get(name, (float(limit.burst), now))
            tokens = min(limit.burst, tokens + (now - at) * limit.rate)
            levels[name] = tokens
            if tokens < 1:
                wait = max(wait, (1 - tokens) / limit.rate)
        for name, _ in buckets:
            self._state[name] = (levels[name] - (0 if wait else 1), now)
        return wait

    async def close(self) -> None:
        pass


# KEYS: bucket names; ARGV: rate, burst for each. Returns the wait, as a string.
_TAKE_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local levels = {}
local wait = 0
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = tonumber(state[1]) or burst
  local at = tonumber(state[2]) or now
  tokens = math.min(burst, tokens + (now - at) * rate)
  levels[i] = tokens
  if tokens < 1 then wait = math.max(wait, (1 - tokens) / rate) end
end
for i, key in ipairs(KEYS) do
  local taken = levels[i]
  if wait == 0 then taken = taken - 1 end
  redis.call('HSET', key, 'tokens', tostring(taken), 'at', tostring(now))
  local burst = tonumber(ARGV[2 * i])
  local rate = tonumber(ARGV[2 * i - 1])
  redis.call('PEXPIRE', key, math.ceil(burst / rate * 1000) + 1000)
end
return tostring(wait)
"""


class RedisBuckets:
    def __init__(self, url: str) -> None:
        import redis.asyncio

        self._redis = redis.asyncio.Redis.from_url(url)
        self._script = self._redis.register_script(_TAKE_SCRIPT)

    async def take(self, buckets: list[tuple[str, Limit]]) -> float:
        args: list[Any] = []
        for _, limit in buckets:
            args += [limit.rate, limit.burst]
        result = await self._script(keys=[name for name, _ in buckets], args=args)
        return float(result)

    async def close(self) -> None:
        await self._redis.aclose()


class RateLimiter:
    def __init__(self, buckets: Buckets, tenant: Limit | None, key: Limit | None) -> None:
        self.buckets = buckets
        self.tenant = tenant
        self.key = key

    async def wait_for(self, tenant_id: int, key_id: int) -> float:
        """0 when the call may go now, else the seconds until it may."""
        wanted = []
        if self.tenant:
            wanted.append((f"wb:rate:tenant:{tenant_id}", self.tenant))
        if self.key:
            wanted.append((f"wb:rate:key:{key_id}", self.key))
        return await self.buckets.take(wanted) if wanted else 0.0


def buckets_for(cache_settings: dict[str, Any]) -> Buckets:
    """Redis buckets when the shared store is Redis, else this process's own."""
    url = redis_url(cache_settings)
    return RedisBuckets(url) if url else LocalBuckets()
