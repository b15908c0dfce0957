"""The shared store's Django cache backends, chosen by the settings (`shared_cache`,
`embedded_store`): values kept as JSON, never pickles (see `store.shared`)."""

from __future__ import annotations

import json
import logging
from typing import Any

from diskcache import DjangoCache

try:  # the optional `redis` extra: needed only where CACHE_URL names Redis
    import redis.asyncio as redis_asyncio
    import redis.asyncio.retry as async_retry
    import redis.retry as sync_retry
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError:  # pragma: no cover - installed without the extra
    redis_asyncio = None  # type: ignore[assignment]  # absent: only a Redis CACHE_URL uses it
from diskcache.core import MODE_BINARY, MODE_RAW, UNKNOWN, Disk
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.core.exceptions import ImproperlyConfigured

from kernel.store_names import EMBEDDED_BACKEND, redis_url

logger = logging.getLogger("workbench.store")

REDIS_BACKEND = "mcp_gateway.store.backends.JsonRedisCache"
# What CACHE_URL may name besides Redis: caches that never leave this process.
IN_PROCESS_BACKENDS = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
)
# The SQLite busy timeout of one attempt; diskcache retries an attempt that times out.
EMBEDDED_BUSY_SECONDS = 0.05
EMBEDDED_SIZE_LIMIT_BYTES = 1 << 30
# Redis connections, in every process (the gateway's asyncio clients, Django's cache): a
# call that cannot connect or answer in time fails in seconds instead of hanging; a
# pooled connection idle this long is checked (PING) before use; a command that meets a
# dropped connection (Redis restarted) is sent again on a new one, twice at the most,
# before the store counts as unavailable.
REDIS_CONNECTION: dict[str, Any] = {
    "socket_timeout": 2.0,
    "socket_connect_timeout": 2.0,
    "health_check_interval": 10.0,
}
REDIS_RETRIES = 2
# Connections one asyncio client of one process may hold (the shared store's and the rate
# buckets' are two): a command beyond waits up to the socket timeout for one to be free,
# instead of opening more (one replica opened 31 for 10 busy sessions: docs/scaling.md).
REDIS_MAX_CONNECTIONS = 16
REDIS_BACKOFF_SECONDS = (0.05, 0.5)  # the first wait, and the most any wait may be


def redis_retry(asynchronous: bool) -> dict[str, Any]:
    """redis-py's retry options (its `from_url` leaves retries off): for the asyncio
    client or the synchronous one Django's cache uses."""
    retry = async_retry.Retry if asynchronous else sync_retry.Retry
    base, cap = REDIS_BACKOFF_SECONDS
    return {
        "retry": retry(ExponentialBackoff(cap=cap, base=base), REDIS_RETRIES),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
    }


class NotJson(ValueError):
    """A stored value that is not JSON: not written by this store, so never trusted."""


def dumps(value: Any) -> bytes:
    """A value as the stores keep it; TypeError for anything that is not plain data."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


def loads(data: bytes | str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise NotJson from exc


def refused(stored_key: str) -> None:
    """Say which entry was refused; its content may be anyone's, and is never logged."""
    logger.warning(
        "Refused the shared store's entry %r: its value is not JSON (read as missing)",
        stored_key,
    )


_INT64 = (-(1 << 63), (1 << 63) - 1)  # what SQLite stores as an integer


class JsonDisk(Disk):
    """diskcache's serialization with string keys and JSON values (numbers, the hot path's
    versions and renewal times, as SQLite numbers, as diskcache keeps them): rows are read
    back as numbers or as bytes that are parsed, never unpickled; a row this class would
    not have written (a pickled key or value, text, a file handle) is refused: NotJson."""

    def put(self, key: Any) -> tuple[Any, bool]:
        if type(key) is not str:
            raise TypeError("the embedded store's keys are strings")
        return super().put(key)

    def get(self, key: Any, raw: bool) -> Any:
        if not raw:
            raise NotJson("a pickled key")
        return super().get(key, raw)

    def store(self, value: Any, read: bool, key: Any = UNKNOWN) -> tuple[Any, ...]:
        if read:
            raise TypeError("the embedded store keeps JSON values, not files")
        if type(value) is float or (type(value) is int and _INT64[0] <= value <= _INT64[1]):
            return super().store(value, False, key=key)  # MODE_RAW: an SQLite number
        return super().store(dumps(value), False, key=key)

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if read or mode not in (MODE_RAW, MODE_BINARY):
            raise NotJson(f"a value stored in mode {mode}")
        data = super().fetch(mode, filename, value, False)
        if type(data) in (int, float):
            return data
        if not isinstance(data, bytes):
            raise NotJson("a value that is neither a number nor bytes")
        return loads(data)


class EmbeddedCache(DjangoCache):
    """diskcache's Django backend on `JsonDisk`: an entry that is not JSON reads as missing."""

    def get(
        self,
        key: str,
        default: Any = None,
        version: int | None = None,
        read: bool = False,
        expire_time: bool = False,
        tag: bool = False,
        retry: bool = False,
    ) -> Any:
        try:
            return super().get(key, default, version, read, expire_time, tag, retry)
        except NotJson:
            refused(self.make_key(key, version=version))
            return default


def embedded_store(directory: str) -> dict[str, Any]:
    """Django's CACHES entry for the embedded store in `directory`."""
    return {
        "BACKEND": EMBEDDED_BACKEND,
        "LOCATION": directory,
        "SHARDS": 4,
        "DATABASE_TIMEOUT": EMBEDDED_BUSY_SECONDS,
        "TIMEOUT": None,
        "OPTIONS": {
            "eviction_policy": "none",
            "size_limit": EMBEDDED_SIZE_LIMIT_BYTES,
            "disk": JsonDisk,
        },
    }


class JsonSerializer:
    """Django's Redis serializer interface, in JSON (an int stays Redis' integer string, so
    `incr` still works on it)."""

    def dumps(self, value: Any) -> bytes:
        return dumps(value)

    def loads(self, data: bytes) -> Any:
        return loads(data)


class JsonRedisCacheClient(RedisCacheClient):
    """Django's Redis client, reading an entry that is not JSON as missing."""

    def get(self, key: str, default: Any) -> Any:
        try:
            return super().get(key, default)
        except NotJson:
            refused(key)
            return default

    def get_many(self, keys: Any) -> dict[str, Any]:
        keys = list(keys)
        found = {}
        for key, value in zip(keys, self.get_client(None).mget(keys), strict=True):
            if value is not None:
                try:
                    found[key] = self._serializer.loads(value)
                except NotJson:
                    refused(key)
        return found


class JsonRedisCache(RedisCache):
    """Django's Redis backend keeping JSON, whatever OPTIONS say: never its pickling
    RedisSerializer."""

    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = JsonRedisCacheClient
        self._options: dict[str, Any] = {
            **REDIS_CONNECTION,
            **redis_retry(asynchronous=False),
            **self._options,
            "serializer": JsonSerializer,
        }


def redis_client(url: str) -> Any:
    """The gateway's asyncio Redis client for `url`, with REDIS_CONNECTION's bounds."""
    if redis_asyncio is None:  # pragma: no cover - installed without the redis extra
        raise ImproperlyConfigured("CACHE_URL names Redis: install the `redis` extra")
    pool = redis_asyncio.BlockingConnectionPool.from_url(
        url,
        max_connections=REDIS_MAX_CONNECTIONS,
        timeout=REDIS_CONNECTION["socket_timeout"],
        **REDIS_CONNECTION,
        **redis_retry(asynchronous=True),
    )
    return redis_asyncio.Redis.from_pool(pool)  # the client owns the pool: aclose closes it


def shared_cache(setting: dict[str, Any]) -> dict[str, Any]:
    """CACHE_URL's Django setting (django-environ's), made to keep JSON only: Redis through
    JsonRedisCache. Local memory and the dummy cache never leave this process; any other
    backend would unpickle what it reads, and is refused."""
    backend = setting.get("BACKEND", "")
    if redis_url(setting):
        return {**setting, "BACKEND": REDIS_BACKEND}
    if backend in IN_PROCESS_BACKENDS:
        return setting
    raise ImproperlyConfigured(
        f"CACHE_URL names a cache ({backend}) that would unpickle what it reads: use "
        "redis://:password@host:6379/0 (values kept as JSON), or leave CACHE_URL unset for "
        "the embedded store."
    )
