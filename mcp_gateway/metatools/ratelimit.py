"""Token buckets for `use_tool` and `open_toolbox` (each its own), per tenant and per API
key, and a per-key bound on requests in flight.

The buckets live where the shared store does, so the limits hold across gateway
processes: in Redis (one atomic script, on Redis's clock) when CACHE_URL is Redis; in the
embedded store's directory by default (an SQLite table of their own, taken in one
transaction, on the machine's clock); in this process only with local memory.
A bucket holds up to `burst` calls and refills at `rate` calls per second. Buckets are
named by row ids under the database's installation (`prefix`, set by the gateway at start):
another database's tenant or key of the same id has buckets of its own.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mcp_gateway.snapshots.callers import INSTALLATION_LIMITS, KeyLimits
from mcp_gateway.store.shared import (
    EMBEDDED_BACKEND,
    EMBEDDED_BUSY_SECONDS,
    PREFIX,
    guard,
    redis_client,
    redis_location,
    redis_url,
)


@dataclass(frozen=True)
class Limit:
    rate: float  # calls per second
    burst: int

    @classmethod
    def parse(cls, rate: float, burst: int) -> Limit | None:
        return cls(rate, max(1, burst or int(rate) or 1)) if rate > 0 else None


def own_limit(default: Limit | None, rate: float | None, burst: int | None) -> Limit | None:
    """A key's limit: its own rate and burst where set, else the gateway's (a rate of 0:
    none). The key's bucket keeps its name: a new limit applies to the tokens it holds."""
    if rate is None and burst is None:
        return default
    if rate is None:
        rate = default.rate if default else 0.0
    if burst is None:
        burst = default.burst if default else 0
    return Limit.parse(rate, burst)


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
        def write(name: str, state: tuple[float, float], limit: Limit) -> None:
            self._state[name] = state

        return _take(buckets, self._clock(), self._state.get, write)

    async def close(self) -> None:
        pass


def _take(
    buckets: list[tuple[str, Limit]],
    now: float,
    read: Callable[[str], tuple[float, float] | None],
    write: Callable[[str, tuple[float, float], Limit], None],
) -> float:
    """One token from every bucket, or none (the same arithmetic wherever they live)."""
    levels = {}
    wait = 0.0
    for name, limit in buckets:
        tokens, at = read(name) or (float(limit.burst), now)
        tokens = min(limit.burst, tokens + max(0.0, now - at) * limit.rate)
        levels[name] = tokens
        if tokens < 1:
            wait = max(wait, (1 - tokens) / limit.rate)
    for name, limit in buckets:
        write(name, (levels[name] - (0 if wait else 1), now), limit)
    return wait


class DiskBuckets:
    """Buckets every process of one machine shares: a table in an SQLite file beside the
    embedded store, read and written in one transaction (`BEGIN IMMEDIATE`: one process
    at a time), taken on the loop (tens of microseconds).

    SQLite from the standard library rather than a diskcache: a take is four statements
    (begin, one select, one upsert of every bucket, commit) where diskcache's get and set
    make eight, and nothing is pickled: 57 us a take of two buckets against 290. A
    bucket's row expires once it would be full again; expired rows read as absent (full)
    and are deleted every `PURGE_SECONDS`. Losing the file loses nothing worth keeping:
    every bucket would be full again.
    """

    PURGE_SECONDS = 60.0
    _SCHEMA = (
        "CREATE TABLE IF NOT EXISTS bucket (name TEXT PRIMARY KEY, tokens REAL NOT NULL, "
        "at REAL NOT NULL, expires REAL NOT NULL) WITHOUT ROWID"
    )
    _UPSERT = (
        "INSERT INTO bucket VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
        "tokens = excluded.tokens, at = excluded.at, expires = excluded.expires"
    )

    def __init__(self, directory: str | Path, clock: Callable[[], float] = time.time) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(
            Path(directory) / "buckets.sqlite3",
            timeout=EMBEDDED_BUSY_SECONDS,
            isolation_level=None,  # transactions are this class's own
            check_same_thread=False,  # one loop uses it; tests may make it elsewhere
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=OFF")  # nothing here must survive a crash
        self._db.execute(self._SCHEMA)
        self._clock = clock
        self._purged = time.monotonic()

    async def take(self, buckets: list[tuple[str, Limit]]) -> float:
        now = self._clock()
        names = [name for name, _ in buckets]
        marks = ", ".join("?" * len(names))
        written: list[tuple[str, float, float, float]] = []

        def write(name: str, state: tuple[float, float], limit: Limit) -> None:
            written.append((name, *state, now + limit.burst / limit.rate + 1))

        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            if time.monotonic() - self._purged > self.PURGE_SECONDS:
                self._purged = time.monotonic()
                db.execute("DELETE FROM bucket WHERE expires <= ?", (now,))
            query = f"SELECT name, tokens, at FROM bucket WHERE name IN ({marks}) AND expires > ?"
            found = {name: (tokens, at) for name, tokens, at in db.execute(query, (*names, now))}
            wait = _take(buckets, now, found.get, write)
            db.executemany(self._UPSERT, written)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return wait

    async def close(self) -> None:
        self._db.close()


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
        self._redis = redis_client(url)
        self._where = redis_location(url)
        self._script = self._redis.register_script(_TAKE_SCRIPT)

    async def take(self, buckets: list[tuple[str, Limit]]) -> float:
        args: list[Any] = []
        for _, limit in buckets:
            args += [limit.rate, limit.burst]
        with guard("rate limit", self._where):
            result = await self._script(keys=[name for name, _ in buckets], args=args)
        return float(result)

    async def close(self) -> None:
        await self._redis.aclose()


class RateLimiter:
    def __init__(
        self,
        buckets: Buckets,
        tenant: Limit | None,
        key: Limit | None,
        *,
        open_tenant: Limit | None = None,
        open_key: Limit | None = None,
        prefix: str = PREFIX,
    ) -> None:
        self.buckets = buckets
        self.prefix = prefix  # the gateway's: store.installation_prefix, set at start
        self.tenant = tenant
        self.key = key
        self.open_tenant = open_tenant
        self.open_key = open_key

    async def wait_for(
        self, tenant_id: int, key_id: int, own: KeyLimits = INSTALLATION_LIMITS
    ) -> float:
        """use_tool: 0 when the call may go now, else the seconds until it may. `own`: the
        key's own limits (its KeyRecord's), each where set in place of the gateway's."""
        key = own_limit(self.key, own.rate, own.burst)
        return await self._take("", tenant_id, key_id, self.tenant, key)

    async def wait_for_open(
        self, tenant_id: int, key_id: int, own: KeyLimits = INSTALLATION_LIMITS
    ) -> float:
        """open_toolbox, in buckets of its own: 0, or the seconds to wait."""
        key = own_limit(self.open_key, own.open_rate, own.open_burst)
        return await self._take("open:", tenant_id, key_id, self.open_tenant, key)

    async def _take(
        self, kind: str, tenant_id: int, key_id: int, tenant: Limit | None, key: Limit | None
    ) -> float:
        wanted = []
        if tenant:
            wanted.append((f"{self.prefix}:rate:{kind}tenant:{tenant_id}", tenant))
        if key:
            wanted.append((f"{self.prefix}:rate:{kind}key:{key_id}", key))
        return await self.buckets.take(wanted) if wanted else 0.0


class InFlight:
    """Requests of one API key being served at once, in this process; past `limit` a new
    one is refused (0: no limit). One client cannot hold every worker of a process."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._counts: Counter[int] = Counter()

    @contextmanager
    def enter(self, key_id: int) -> Iterator[bool]:
        """Yields whether the request may proceed; counts it while it does."""
        if self.limit and self._counts[key_id] >= self.limit:
            yield False
            return
        self._counts[key_id] += 1
        try:
            yield True
        finally:
            self._counts[key_id] -= 1
            if not self._counts[key_id]:
                del self._counts[key_id]


def buckets_for(cache_settings: dict[str, Any]) -> Buckets:
    """Where the shared store is: Redis, the embedded store's directory, or this process."""
    url = redis_url(cache_settings)
    if url:
        return RedisBuckets(url)
    if cache_settings.get("BACKEND") == EMBEDDED_BACKEND:
        return DiskBuckets(Path(cache_settings["LOCATION"]) / "rate-buckets")
    return LocalBuckets()
