"""The shared store reads and writes the very entries Django's cache does, so that the
admin's processes and the gateway's see each other's (the embedded store, Redis, and
local memory), and the embedded store never evicts. Both shared stores keep JSON: every
value the gateway, toolboxes/ and the libraries write round-trips, and a value that is not
JSON (a planted pickle) is read as missing, logged with its key (issue 20)."""

import logging
import pickle
import random
import uuid
from pathlib import Path

import anyio
import pytest
from diskcache import FanoutCache
from django.core.cache.backends.locmem import LocMemCache

from kernel.store_names import redis_url
from mcp_gateway.store.backends import EmbeddedCache, JsonRedisCache, embedded_store
from mcp_gateway.store.shared import CacheStore, EmbeddedStore, RedisStore
from tests.harness.markers import requires_redis
from tests.harness.services import REDIS_URL

# What is written to the store, by whom: (value written, value read back).
WRITTEN = {
    "version": (1_790_000_000_123_456_789, 1_790_000_000_123_456_789),  # toolboxes.versions
    "open": (1_790_000_000.25, 1_790_000_000.25),  # mcp_gateway.metatools.open_state: renewed at
    "client": (("claude-code", "2.1.0"), ["claude-code", "2.1.0"]),  # telemetry.ClientNames
    "probe": (1, 1),  # workbench_site.health
    "cimd_backoff": (True, True),  # oauth2_provider.cimd (django-oauth-toolkit)
}


def run(scenario):
    return anyio.run(scenario, backend="asyncio")


def exercise(django_cache, store, json_only: bool = True) -> None:
    """`json_only`: a shared store (what is read back is JSON's); local memory keeps the
    written Python value itself, never leaving the process."""
    key = f"wb:test:{uuid.uuid4().hex}"

    async def scenario() -> None:
        django_cache.set(key, 42, 60)  # as toolboxes.versions writes a version
        assert await store.get(key) == 42
        await store.set(key, 7, 60)
        assert django_cache.get(key) == 7
        assert await store.get(key + ":absent", 0) == 0
        await store.delete_many([key])
        assert django_cache.get(key) is None
        for name, (written, read) in WRITTEN.items():
            read = read if json_only else written
            django_cache.set(f"{key}:{name}", written, 60)
            assert await store.get(f"{key}:{name}") == read, name
            await store.set(f"{key}:{name}:back", written, 60)
            assert django_cache.get(f"{key}:{name}:back") == read, name
        assert django_cache.get_many([f"{key}:version", f"{key}:open"]) == {
            f"{key}:version": WRITTEN["version"][1],
            f"{key}:open": WRITTEN["open"][1],
        }
        await store.close()

    run(scenario)


def test_local_memory_store_shares_djangos_entries():
    backend = LocMemCache("workbench-store-test", {})
    exercise(LocMemCache("workbench-store-test", {}), CacheStore(backend), json_only=False)


def embedded(directory) -> EmbeddedCache:
    params = embedded_store(str(directory))
    return EmbeddedCache(params["LOCATION"], params)


def test_embedded_store_shares_djangos_entries_across_backends(tmp_path):
    """Two backends on one directory stand for two processes of one machine."""
    exercise(embedded(tmp_path), EmbeddedStore(embedded(tmp_path)))


def test_embedded_store_keeps_every_entry_past_its_size_limit(tmp_path):
    """No eviction: one tenant's entries can never push out another's."""
    params = embedded_store(str(tmp_path))
    params["OPTIONS"] = {**params["OPTIONS"], "size_limit": 64 * 1024}
    cache = EmbeddedCache(str(tmp_path), params)
    cache.set("wb:open:key:1:dev", 1.0, 3600)
    for index in range(2000):  # far past 64 KiB
        cache.set(f"wb:other:{index}", "x" * 100, 3600)
    assert cache.get("wb:open:key:1:dev") == 1.0


@requires_redis
def test_redis_store_shares_djangos_entries():
    url = f"{REDIS_URL}/{random.randint(1, 15)}"
    django_cache = JsonRedisCache(url, {"KEY_PREFIX": "wbtest"})
    exercise(django_cache, RedisStore(url, JsonRedisCache(url, {"KEY_PREFIX": "wbtest"})))


class Plant:
    """Creates `path` when unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def refusal(stored: str) -> str:
    return f"Refused the shared store's entry {stored!r}: its value is not JSON (read as missing)"


def test_the_embedded_store_never_unpickles_what_it_reads(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="workbench.store")
    directory, pwned = tmp_path / "store", tmp_path / "pwned"
    cache = embedded(directory)
    stored = cache.make_key("wb:x:tenant-version:3")
    # As an attacker writes it: diskcache's own default (pickling) serialization.
    attacker = FanoutCache(str(directory), shards=embedded_store(str(directory))["SHARDS"])
    attacker.set(stored, Plant(pwned))
    attacker.set(cache.make_key("wb:x:text"), "a str, stored as text")
    attacker.close()

    async def scenario() -> None:
        store = EmbeddedStore(embedded(directory))
        assert await store.get("wb:x:tenant-version:3", 0) == 0
        assert await store.get("wb:x:text") is None
        await store.close()

    run(scenario)
    assert cache.get("wb:x:tenant-version:3", "missing") == "missing"
    assert cache.get_many(["wb:x:tenant-version:3"]) == {}
    assert not pwned.exists()
    assert [r.getMessage() for r in caplog.records] == [
        refusal(stored),
        refusal(cache.make_key("wb:x:text")),
        refusal(stored),
        refusal(stored),
    ]
    assert str(pwned) not in caplog.text
    cache.set("wb:x:tenant-version:3", 5)  # and a good write mends it
    assert cache.get("wb:x:tenant-version:3") == 5


def test_the_embedded_store_refuses_to_write_what_json_cannot_hold(tmp_path):
    with pytest.raises(TypeError):
        embedded(tmp_path).set("wb:x", object())


@requires_redis
def test_redis_never_unpickles_what_it_reads(tmp_path, caplog):
    import redis

    caplog.set_level(logging.WARNING, logger="workbench.store")
    url, pwned = f"{REDIS_URL}/{random.randint(1, 15)}", tmp_path / "pwned"
    cache = JsonRedisCache(
        url, {"OPTIONS": {"serializer": "django.core.cache.backends.redis.RedisSerializer"}}
    )
    stored = cache.make_key(f"wb:x:{uuid.uuid4().hex}")
    client = redis.Redis.from_url(url)
    client.set(stored, pickle.dumps(Plant(pwned)))
    key = stored.removeprefix(":1:")

    async def scenario() -> None:
        store = RedisStore(url, cache)
        assert await store.get(key, 0) == 0
        await store.close()

    try:
        run(scenario)
        assert cache.get(key, "missing") == "missing"  # whatever OPTIONS named
        assert cache.get_many([key]) == {}
        cache.set(f"{key}:n", 5)
        assert cache.incr(f"{key}:n") == 6  # an int is still Redis' integer string
    finally:
        client.delete(stored, f"{stored}:n")
    assert not pwned.exists()
    assert [r.getMessage() for r in caplog.records] == [refusal(stored)] * 3


def test_redis_url_from_django_settings():
    redis = "django.core.cache.backends.redis.RedisCache"
    assert redis_url({"BACKEND": redis, "LOCATION": "redis://a:1/0,redis://b:2/0"}) == (
        "redis://a:1/0"
    )
    assert redis_url({"BACKEND": redis, "LOCATION": ["redis://c:3/1"]}) == "redis://c:3/1"
    assert redis_url({"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}) is None
