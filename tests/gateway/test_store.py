"""The shared store reads and writes the very entries Django's cache does, so that the
admin's processes and the gateway's see each other's (the embedded store, Redis, and
local memory), and the embedded store never evicts."""

import random
import uuid

import anyio
from diskcache import DjangoCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache

from mcp_gateway.store import CacheStore, EmbeddedStore, RedisStore, embedded_store, redis_url
from tests.harness.markers import requires_redis
from tests.harness.services import REDIS_URL


def run(scenario):
    return anyio.run(scenario, backend="asyncio")


def exercise(django_cache, store) -> None:
    key = f"wb:test:{uuid.uuid4().hex}"

    async def scenario() -> None:
        django_cache.set(key, 42, 60)  # as toolboxes.versions writes a version
        assert await store.get(key) == 42
        await store.set(key, 7, 60)
        assert django_cache.get(key) == 7
        assert await store.get(key + ":absent", 0) == 0
        await store.delete_many([key])
        assert django_cache.get(key) is None
        await store.close()

    run(scenario)


def test_local_memory_store_shares_djangos_entries():
    backend = LocMemCache("workbench-store-test", {})
    exercise(LocMemCache("workbench-store-test", {}), CacheStore(backend))


def embedded(directory) -> DjangoCache:
    params = embedded_store(str(directory))
    return DjangoCache(params["LOCATION"], params)


def test_embedded_store_shares_djangos_entries_across_backends(tmp_path):
    """Two backends on one directory stand for two processes of one machine."""
    exercise(embedded(tmp_path), EmbeddedStore(embedded(tmp_path)))


def test_embedded_store_keeps_every_entry_past_its_size_limit(tmp_path):
    """No eviction: one tenant's entries can never push out another's."""
    params = embedded_store(str(tmp_path))
    params["OPTIONS"] = {**params["OPTIONS"], "size_limit": 64 * 1024}
    cache = DjangoCache(str(tmp_path), params)
    cache.set("wb:open:key:1:dev", 1.0, 3600)
    for index in range(2000):  # far past 64 KiB
        cache.set(f"wb:other:{index}", "x" * 100, 3600)
    assert cache.get("wb:open:key:1:dev") == 1.0


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
