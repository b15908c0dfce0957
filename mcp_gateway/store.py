"""The shared store: Django's cache as configured (CACHE_URL), awaited without blocking.

Two readers share it: the gateway (open toolboxes, configuration versions) and
`toolboxes/` (which bumps those versions through Django's cache API, from any process).
Django's own async cache methods run in asgiref's one shared thread, which serialises
every request of the process behind it; so here:
- an in-process backend (local memory) does no I/O and is called directly;
- Redis is spoken to with redis' asyncio client, one connection pool per gateway, with
  the keys and values Django's Redis backend uses (`make_key`, its serializer), so that
  both sides read each other's entries;
- any other backend runs in a worker thread.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisSerializer

_IN_PROCESS = (LocMemCache, DummyCache)


class SharedStore(Protocol):
    async def get(self, key: str, default: Any = None) -> Any: ...

    async def set(self, key: str, value: Any, timeout: float | None) -> None: ...

    async def touch(self, key: str, timeout: float | None) -> bool:
        """Renew the key's expiry; False when there is no such key."""
        ...

    async def delete_many(self, keys: list[str]) -> None: ...

    async def close(self) -> None: ...


def redis_url(cache_settings: dict[str, Any]) -> str | None:
    """The (first, written-to) Redis server of a Django cache setting, if it is Redis."""
    if not cache_settings.get("BACKEND", "").endswith("RedisCache"):
        return None
    location = cache_settings["LOCATION"]
    servers = re.split("[;,]", location) if isinstance(location, str) else location
    return servers[0]


class CacheStore:
    """Django's cache backend, called directly when it is in-process, else in a thread."""

    def __init__(self, backend: BaseCache) -> None:
        self._backend = backend
        self._direct = isinstance(backend, _IN_PROCESS)

    async def _run(self, method_name: str, *args: Any) -> Any:
        method = getattr(self._backend, method_name)
        if self._direct:
            return method(*args)
        return await sync_to_async(method, thread_sensitive=False)(*args)

    async def get(self, key: str, default: Any = None) -> Any:
        return await self._run("get", key, default)

    async def set(self, key: str, value: Any, timeout: float | None) -> None:
        await self._run("set", key, value, timeout)

    async def touch(self, key: str, timeout: float | None) -> bool:
        return bool(await self._run("touch", key, timeout))

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

    async def touch(self, key: str, timeout: float | None) -> bool:
        if timeout is None:
            await self._redis.persist(self._make_key(key))
            return bool(await self._redis.exists(self._make_key(key)))
        return bool(await self._redis.expire(self._make_key(key), max(1, int(timeout))))

    async def delete_many(self, keys: list[str]) -> None:
        if keys:
            await self._redis.delete(*[self._make_key(key) for key in keys])

    async def close(self) -> None:
        await self._redis.aclose()


def store_for(cache_settings: dict[str, Any]) -> SharedStore:
    """The store for the default cache. Create it in the event loop that will use it."""
    backend = caches.create_connection("default")
    url = redis_url(cache_settings)
    return RedisStore(url, backend) if url else CacheStore(backend)
