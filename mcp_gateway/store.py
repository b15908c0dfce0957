"""The shared store (Django's cache: local memory, or Redis through CACHE_URL), awaited
without a thread hop where none is needed.

Django's async cache methods run every call in asgiref's one shared thread, which
serialises all requests of the process behind it. An in-process backend does no I/O, so
it is called directly; a networked one runs in a worker thread, never the shared one.
One backend object serves the whole process: `django.core.cache.caches` hands each
asyncio task a new one (and so, for Redis, a new connection pool per request), closed
only at the end of a Django request, which the gateway's requests are not.
"""

from __future__ import annotations

import functools
from typing import Any

from asgiref.sync import sync_to_async
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache

_IN_PROCESS = (LocMemCache, DummyCache)


@functools.cache
def _backend() -> BaseCache:
    return caches.create_connection("default")


async def _run(method_name: str, *args: Any) -> Any:
    backend = _backend()
    method = getattr(backend, method_name)
    if isinstance(backend, _IN_PROCESS):
        return method(*args)
    return await sync_to_async(method, thread_sensitive=False)(*args)


async def get(key: str, default: Any = None) -> Any:
    return await _run("get", key, default)


async def set(key: str, value: Any, timeout: float | None) -> None:
    await _run("set", key, value, timeout)


async def touch(key: str, timeout: float | None) -> bool:
    """Renew the key's expiry; False when there is no such key."""
    return bool(await _run("touch", key, timeout))


async def delete_many(keys: list[str]) -> None:
    await _run("delete_many", keys)
