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


def end_other_database_sessions() -> None:
    """On PostgreSQL, end every other session on the test database, before it is dropped: a
    gateway's worker thread (the call log's writer, a status recorder) may still hold one,
    and the drop then fails ("being accessed by other users")."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
