"""Skip markers for tests that need a service the machine may not run."""

from __future__ import annotations

import pytest

from tests.harness.services import REDIS_URL, database_is_postgresql, redis_reachable

requires_postgresql = pytest.mark.skipif(
    not database_is_postgresql(),
    reason="PostgreSQL-only: runs when TEST_DATABASE_URL points at PostgreSQL "
    "(make test sets it when a server is reachable)",
)

requires_redis = pytest.mark.skipif(
    not redis_reachable(), reason=f"Redis is not reachable at {REDIS_URL} (TEST_REDIS_URL)"
)
