"""Markers that depend on where the suite runs."""

import os

import pytest


def database_is_postgresql() -> bool:
    return os.environ.get("TEST_DATABASE_URL", "").startswith(("postgres", "pgsql", "psql"))


requires_postgresql = pytest.mark.skipif(
    not database_is_postgresql(),
    reason="PostgreSQL-only: runs when TEST_DATABASE_URL points at PostgreSQL "
    "(make test sets it when a server is reachable)",
)


REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379")


def redis_reachable() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping())
    except Exception:
        return False


requires_redis = pytest.mark.skipif(
    not redis_reachable(), reason=f"Redis is not reachable at {REDIS_URL} (TEST_REDIS_URL)"
)
