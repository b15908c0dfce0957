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

What another process wrote is data, never code (issue 20): both shared stores keep values
as JSON (`backends.JsonDisk` for the embedded one, `backends.JsonSerializer` for Redis), so
anyone who can write to Redis or to the store's files can at worst make an entry wrong,
never run code in the gateway. A value that is not JSON (a planted pickle, say) is refused:
read as missing, and logged with its key, never its content. Backends that would unpickle
what they read (files, a database table, memcached) are refused at start; local memory and
the dummy cache never leave the process.

Entries that name a database row (a tenant, an API key, a sign-in) carry the database's
installation id in their prefix (`installation_prefix`): a store that outlives its
database, or is shared by two, never hands one database's state to another's rows.
"""

from __future__ import annotations

from typing import Any, Protocol

from asgiref.sync import sync_to_async
from diskcache import DjangoCache
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache

from kernel.store_names import (
    EMBEDDED_BACKEND,
    PREFIX,
    describe_store,
    installation_prefix,
    redis_location,
    redis_url,
)
from mcp_gateway.store.backends import (
    EMBEDDED_BUSY_SECONDS,
    REDIS_BACKEND,
    EmbeddedCache,
    NotJson,
    dumps,
    embedded_store,
    loads,
    redis_client,
    refused,
    shared_cache,
)
from mcp_gateway.store.failure import StoreUnavailable, guard

__all__ = [  # the backends' names the rest of the gateway reaches through here
    "EMBEDDED_BACKEND",
    "EMBEDDED_BUSY_SECONDS",
    "PREFIX",
    "REDIS_BACKEND",
    "EmbeddedCache",
    "EmbeddedStore",
    "SharedStore",
    "StoreUnavailable",
    "describe_store",
    "embedded_store",
    "guard",
    "installation_prefix",
    "redis_client",
    "redis_location",
    "redis_url",
    "shared_cache",
    "store_for",
]


EMBEDDED_WHERE = "the embedded store"


class SharedStore(Protocol):
    async def get(self, key: str, default: Any = None) -> Any: ...

    async def set(self, key: str, value: Any, timeout: float | None) -> None: ...

    async def delete_many(self, keys: list[str]) -> None: ...

    async def close(self) -> None: ...


class EmbeddedStore:
    """diskcache's Django backend, called directly; a read that meets a writer's lock
    waits for it instead of answering "missing"."""

    def __init__(self, backend: DjangoCache) -> None:
        self.backend = backend

    async def get(self, key: str, default: Any = None) -> Any:
        with guard("read", EMBEDDED_WHERE):
            return self.backend.get(key, default, retry=True)

    async def set(self, key: str, value: Any, timeout: float | None) -> None:
        with guard("write", EMBEDDED_WHERE):
            self.backend.set(key, value, timeout)

    async def delete_many(self, keys: list[str]) -> None:
        with guard("delete", EMBEDDED_WHERE):
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
        with guard(method_name, type(self._backend).__name__):
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
        self._redis = redis_client(url)
        self.where = redis_location(url)
        self._make_key = backend.make_key

    async def get(self, key: str, default: Any = None) -> Any:
        stored = self._make_key(key)
        with guard("read", self.where):
            value = await self._redis.get(stored)
        if value is None:
            return default
        try:
            return loads(value)
        except NotJson:
            refused(stored)
            return default

    async def set(self, key: str, value: Any, timeout: float | None) -> None:
        expiry = None if timeout is None else max(1, int(timeout))
        with guard("write", self.where):
            await self._redis.set(self._make_key(key), dumps(value), ex=expiry)

    async def delete_many(self, keys: list[str]) -> None:
        if keys:
            with guard("delete", self.where):
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
