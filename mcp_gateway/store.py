"""The shared store: Django's cache as configured, awaited without blocking the loop.

Every process that serves or changes the configuration shares it: the gateway (open
toolboxes, configuration versions, rate buckets) and `toolboxes/` (which bumps those
versions through Django's cache API, from the admin or a command).

- By default it is an embedded store on disk (`diskcache`, SQLite in WAL mode) that every
  process of one machine opens: several gateway workers and `manage.py` commands see one
  truth, as they would with Redis. It never evicts (each entry is bounded by its owner's
  configuration, so one tenant cannot push out another's), and expired entries are culled.
  Reads and the small writes here take microseconds, so they are made on the loop
  directly rather than through a thread hop.
- Redis (CACHE_URL=redis://...) is spoken to with redis' asyncio client, one connection
  pool per gateway, with the keys and values Django's Redis backend uses (`make_key`, its
  serializer), so both sides read each other's entries.
- Local memory (CACHE_URL=locmemcache://) is for a single process only; any other backend
  runs in a worker thread.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from diskcache import DjangoCache
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisSerializer

EMBEDDED_BACKEND = "diskcache.DjangoCache"
# The SQLite busy timeout of one attempt; diskcache retries an attempt that times out.
EMBEDDED_BUSY_SECONDS = 0.05
EMBEDDED_SIZE_LIMIT_BYTES = 1 << 30


def embedded_store(directory: str) -> dict[str, Any]:
    """Django's CACHES entry for the embedded store in `directory`."""
    return {
        "BACKEND": EMBEDDED_BACKEND,
        "LOCATION": directory,
        "SHARDS": 4,
        "DATABASE_TIMEOUT": EMBEDDED_BUSY_SECONDS,
        "TIMEOUT": None,
        "OPTIONS": {"eviction_policy": "none", "size_limit": EMBEDDED_SIZE_LIMIT_BYTES},
    }


class SharedStore(Protocol):
    async def get(self, key: str, default: Any = None) -> Any: ...

    async def set(self, key: str, value: Any, timeout: float | None) -> None: ...

    async def delete_many(self, keys: list[str]) -> None: ...

    async def close(self) -> None: ...


def redis_url(cache_settings: dict[str, Any]) -> str | None:
    """The (first, written-to) Redis server of a Django cache setting, if it is Redis."""
    if not cache_settings.get("BACKEND", "").endswith("RedisCache"):
        return None
    location = cache_settings["LOCATION"]
    servers = re.split("[;,]", location) if isinstance(location, str) else location
    return servers[0]


class EmbeddedStore:
    """diskcache's Django backend, called directly; a read that meets a writer's lock
    waits for it instead of answering "missing"."""

    def __init__(self, backend: DjangoCache) -> None:
        self.backend = backend

    async def get(self, key: str, default: Any = None) -> Any:
        return self.backend.get(key, default, retry=True)

    async def set(self, key: str, value: Any, timeout: float | None) -> None:
        self.backend.set(key, value, timeout)

    async def delete_many(self, keys: list[str]) -> None:
        self.backend.delete_many(keys)

    async def close(self) -> None:
        self.backend.close()


class CacheStore:
    """Django's cache backend, called directly when it is in-process, else in a thread."""

    def __init__(self, backend: BaseCache) -> None:
        self._backend = backend
        self._direct = isinstance(backend, LocMemCache | DummyCache)

    async def _run(self, method_name: str, *args: Any) -> Any:
        method = getattr(self._backend, method_name)
        if self._direct:
            return method(*args)
        return await sync_to_async(method, thread_sensitive=False)(*args)

    async def get(self, key: str, default: Any = None) -> Any:
        return await self._run("get", key, default)

    async def set(self, key: str, value: Any, timeout: float | None) -> None:
        await self._run("set", key, value, timeout)

    async def delete_many(self, keys: list[str]) -> None:
        await self._run("delete_many", keys)

    async def close(self) -> None:
        pass


class RedisStore:
    """The same entries as Django's Redis backend, through redis' asyncio client."""

    def __init__(self, url: str, backend: BaseCache) -> None:
        import redis.asyncio

        self._redis = redis.asyncio.Redis.from_url(url)
        self._make_key = backend.make_key
        self._serializer = RedisSerializer()

    async def get(self, key: str, default: Any = None) -> Any:
        value = await self._redis.get(self._make_key(key))
        return default if value is None else self._serializer.loads(value)

    async def set(self, key: str, value: Any, timeout: float | None) -> None:
        expiry = None if timeout is None else max(1, int(timeout))
        await self._redis.set(self._make_key(key), self._serializer.dumps(value), ex=expiry)

    async def delete_many(self, keys: list[str]) -> None:
        if keys:
            await self._redis.delete(*[self._make_key(key) for key in keys])

    async def close(self) -> None:
        await self._redis.aclose()


def store_for(cache_settings: dict[str, Any]) -> SharedStore:
    """The store for the default cache. Create it in the event loop that will use it."""
    backend = caches.create_connection("default")
    url = redis_url(cache_settings)
    if url:
        return RedisStore(url, backend)
    if isinstance(backend, DjangoCache):
        return EmbeddedStore(backend)
    return CacheStore(backend)
