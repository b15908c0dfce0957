"""Services the suite may find running beside it (PostgreSQL, Redis) (markers: markers.py)."""

from __future__ import annotations

import os

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379")


def database_is_postgresql() -> bool:
    return os.environ.get("TEST_DATABASE_URL", "").startswith(("postgres", "pgsql", "psql"))


def redis_reachable(url: str = REDIS_URL) -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(url, socket_connect_timeout=2).ping())
    except Exception:
        return False
