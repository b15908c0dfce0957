"""The respawn policy: immediate retry, bounded exponential backoff, then a cool-down."""

from mcp_gateway.downstream.respawn import RespawnPolicy, ServerHealth


def test_backoff_grows_is_bounded_and_ends_in_cooldown():
    health = ServerHealth(RespawnPolicy(backoff_max=0.3, cooldown=30, failures_before_cooldown=5))
    waits = []
    for _ in range(4):
        health.failed("boom", now=100.0)
        waits.append(round(health.wait_seconds(now=100.0), 3))
        assert not health.in_cooldown(now=100.0)
    assert waits == [0.0, 0.1, 0.2, 0.3]  # 0.4 capped at backoff_max
    health.failed("boom", now=100.0)
    assert health.in_cooldown(now=100.0)
    assert health.wait_seconds(now=100.0) == 30
    assert not health.in_cooldown(now=130.0)  # one new attempt after the cool-down


def test_a_success_ends_the_streak():
    health = ServerHealth(RespawnPolicy(failures_before_cooldown=2))
    health.failed("boom", now=0.0)
    health.succeeded()
    health.failed("boom", now=0.0)
    assert not health.in_cooldown(now=0.0)
    assert health.wait_seconds(now=0.0) == 0
