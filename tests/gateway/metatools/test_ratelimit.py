"""Token buckets: local, and in Redis (shared by processes) when Redis is reachable."""

import uuid

import anyio

from mcp_gateway.metatools.ratelimit import (
    Limit,
    LocalBuckets,
    RateLimiter,
    RedisBuckets,
    own_limit,
)
from mcp_gateway.snapshots.callers import KeyLimits
from tests.harness.markers import requires_redis
from tests.harness.services import REDIS_URL


def run(coroutine_function, *args):
    return anyio.run(coroutine_function, *args, backend="asyncio")


def test_limit_parsing():
    assert Limit.parse(0, 10) is None
    assert Limit.parse(5, 0) == Limit(5, 5)
    assert Limit.parse(0.5, 0) == Limit(0.5, 1)
    assert Limit.parse(2, 7) == Limit(2, 7)


def test_a_keys_own_limit_replaces_each_value_it_sets():
    default = Limit(50, 100)
    assert own_limit(default, None, None) is default
    assert own_limit(default, 2, None) == Limit(2, 100)
    assert own_limit(default, None, 7) == Limit(50, 7)
    assert own_limit(default, 0, 7) is None  # 0: no limit for this key
    assert own_limit(None, 2, None) == Limit(2, 2)  # the gateway limits no key: rate's burst
    assert own_limit(None, None, 7) is None  # a burst alone, with no rate, limits nothing


def test_a_keys_own_limits_fill_its_bucket_only():
    limiter = RateLimiter(
        LocalBuckets(frozen_clock), None, Limit(100, 100), open_key=Limit(100, 100)
    )
    own = KeyLimits(rate=1, burst=1, open_rate=0.5, open_burst=1)
    assert run(limiter.wait_for, 1, 1, own) == 0
    assert run(limiter.wait_for, 1, 1, own) == 1.0
    assert run(limiter.wait_for_open, 1, 1, own) == 0
    assert run(limiter.wait_for_open, 1, 1, own) == 2.0
    assert run(limiter.wait_for, 1, 2) == run(limiter.wait_for, 1, 2) == 0  # the default


def frozen_clock() -> float:
    return 1000.0


def test_local_bucket_allows_a_burst_then_asks_to_wait():
    limiter = RateLimiter(LocalBuckets(frozen_clock), tenant=None, key=Limit(rate=1, burst=3))
    waits = [run(limiter.wait_for, 1, 1) for _ in range(4)]
    assert waits[:3] == [0, 0, 0]
    assert waits[3] == 1  # one token short, refilling at one a second
    assert run(limiter.wait_for, 1, 2) == 0  # another key has its own bucket


def test_a_refused_call_takes_no_token_from_either_bucket():
    buckets = LocalBuckets(frozen_clock)  # no refill while the test runs
    limiter = RateLimiter(buckets, tenant=Limit(100, 100), key=Limit(0.001, 1))
    assert run(limiter.wait_for, 1, 1) == 0
    assert run(limiter.wait_for, 1, 1) > 0  # the key's bucket is empty
    # The tenant bucket lost only the one token: a second key still gets 99 calls.
    assert all(run(limiter.wait_for, 1, key) == 0 for key in range(2, 101))
    assert run(limiter.wait_for, 1, 101) > 0


def test_a_bucket_refills_with_time():
    now = [0.0]
    limiter = RateLimiter(LocalBuckets(lambda: now[0]), tenant=None, key=Limit(rate=2, burst=1))
    assert run(limiter.wait_for, 1, 1) == 0
    assert run(limiter.wait_for, 1, 1) == 0.5
    now[0] += 0.5
    assert run(limiter.wait_for, 1, 1) == 0


@requires_redis
def test_redis_buckets_are_shared_between_limiters():
    tenant_id = uuid.uuid4().int % 10**9

    async def scenario() -> list[float]:
        first, second = RedisBuckets(f"{REDIS_URL}/0"), RedisBuckets(f"{REDIS_URL}/0")
        limit = Limit(rate=0.5, burst=3)
        try:
            one = RateLimiter(first, tenant=limit, key=None)
            two = RateLimiter(second, tenant=limit, key=None)
            return [await limiter.wait_for(tenant_id, 1) for limiter in (one, two, one, two)]
        finally:
            await first.close()
            await second.close()

    waits = run(scenario)
    assert waits[:3] == [0, 0, 0]
    assert 0 < waits[3] <= 2


def test_the_retry_in_the_text_is_the_one_in_the_details_and_never_early():
    from mcp_gateway.metatools.errors import open_rate_limited, rate_limited

    for wait in (9996.705, 0.001, 1.0, 2.499999):
        for error in (open_rate_limited("dev", wait), rate_limited("echo", "s", "dev", wait)):
            seconds = error.details["retry_after"]
            assert seconds >= wait and seconds - wait < 0.01
            assert error.message.endswith(f"retry in {seconds:.2f}s")


def test_disk_buckets_read_expired_rows_as_full_and_purge_them(tmp_path):
    from mcp_gateway.metatools.ratelimit import DiskBuckets

    now = [1000.0]
    buckets = DiskBuckets(tmp_path, clock=lambda: now[0])
    limit = Limit(rate=1, burst=2)

    def rows() -> list[str]:
        return [name for (name,) in buckets._db.execute("SELECT name FROM bucket ORDER BY name")]

    async def scenario() -> None:
        assert await buckets.take([("wb:rate:key:1", limit)]) == 0
        assert await buckets.take([("wb:rate:key:1", limit)]) == 0
        assert await buckets.take([("wb:rate:key:1", limit)]) == 1.0  # empty: wait 1 s
        assert await buckets.take([("wb:rate:key:2", limit)]) == 0
        # A row expires once its bucket would be full again (burst / rate + 1 s): read as
        # absent, so full, though it is still in the table until the next purge...
        now[0] += 3.5
        assert rows() == ["wb:rate:key:1", "wb:rate:key:2"]
        assert await buckets.take([("wb:rate:key:1", limit)]) == 0
        # ...which removes every expired row, and keeps what this take wrote.
        buckets._purged -= DiskBuckets.PURGE_SECONDS + 1
        assert await buckets.take([("wb:rate:key:3", limit)]) == 0
        assert rows() == ["wb:rate:key:1", "wb:rate:key:3"]
        await buckets.close()

    anyio.run(scenario)
