"""The shared store reads and writes the very entries Django's cache does, so that the
admin's processes and the gateway's see each other's (Redis, and local memory)."""

import random
import uuid

import anyio
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache

from mcp_gateway.store import CacheStore, RedisStore, redis_url
from tests.markers import REDIS_URL, requires_redis


def run(scenario):
    return anyio.run(scenario, backend="asyncio")


def exercise(django_cache, store) -> None:
    key = f"wb:test:{uuid.uuid4().hex}"

    async def scenario() -> None:
        django_cache.set(key, 42, 60)  # as toolboxes.versions writes a version
        assert await store.get(key) == 42
        await store.set(key, 7, 60)
        assert django_cache.get(key) == 7
        assert await store.touch(key, 60) is True
        assert await store.touch(key + ":absent", 60) is False
        assert await store.get(key + ":absent", 0) == 0
        await store.delete_many([key])
        assert django_cache.get(key) is None
        await store.close()

    run(scenario)


def test_local_memory_store_shares_djangos_entries():
    backend = LocMemCache("workbench-store-test", {})
    exercise(LocMemCache("workbench-store-test", {}), CacheStore(backend))


@requires_redis
def test_redis_store_shares_djangos_entries():
    url = f"{REDIS_URL}/{random.randint(1, 15)}"
    django_cache = RedisCache(url, {"KEY_PREFIX": "wbtest"})
    exercise(django_cache, RedisStore(url, RedisCache(url, {"KEY_PREFIX": "wbtest"})))


def test_redis_url_from_django_settings():
    redis = "django.core.cache.backends.redis.RedisCache"
    assert redis_url({"BACKEND": redis, "LOCATION": "redis://a:1/0,redis://b:2/0"}) == (
        "redis://a:1/0"
    )
    assert redis_url({"BACKEND": redis, "LOCATION": ["redis://c:3/1"]}) == "redis://c:3/1"
    assert redis_url({"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}) is None
