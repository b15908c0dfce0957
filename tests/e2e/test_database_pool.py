"""A gateway on PostgreSQL borrows its connections from a pool (issue 23: with
CONN_MAX_AGE=0 every `/readyz` probe opened a connection of its own, 29 in 20 s of idle
health checks, and so did every read of the gateway's ORM thread)."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import httpx2
from django.db import connection

from tests.harness.deployment import Deployment
from tests.harness.live import make_tenant_setup
from tests.harness.markers import requires_postgresql
from tests.harness.results import INITIALIZE_PARAMS, raw_rpc

pytestmark = requires_postgresql

PROBES = 20


def sessions_opened() -> int:
    """Connections ever made to the test database (a backend's count is flushed at its
    exit at the latest: a connection opened and closed per probe is counted at once)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


def test_probes_and_key_checks_borrow_pooled_connections(
    transactional_db: None, tmp_path: Path
) -> None:
    key = make_tenant_setup("pooled").key
    settings = connection.settings_dict
    url = (
        f"postgres://{settings['USER']}@{settings['HOST'] or '127.0.0.1'}:"
        f"{settings['PORT'] or 5432}/{settings['NAME']}"
    )
    deployment = Deployment(tmp_path, env_extra={"DATABASE_URL": url})
    try:
        gateway, mcp_url, log = deployment.start_gateway()
        base = mcp_url.removesuffix("/mcp")

        async def requests(probes: int) -> list[int]:
            statuses = []
            async with httpx2.AsyncClient(timeout=30) as http:
                for _ in range(probes):
                    statuses.append((await http.get(f"{base}/readyz")).status_code)
                    init = await raw_rpc(http, mcp_url, "initialize", INITIALIZE_PARAMS, key=key)
                    statuses.append(init.status_code)
            return statuses

        assert anyio.run(requests, 1) == [200, 200], log.read_text()[-2000:]  # the pool opens
        before = sessions_opened()
        statuses = anyio.run(requests, PROBES)
        opened = sessions_opened() - before
        assert statuses == [200] * (2 * PROBES), log.read_text()[-2000:]
        # 20 probes and 20 key checks: at most the pool's growth, not one per request.
        assert opened <= 2, f"{opened} connections opened for {2 * PROBES} requests"
        # The pool's threads hold no shutdown up: SIGTERM ends the process, cleanly.
        gateway.send_signal(signal.SIGTERM)
        assert gateway.wait(timeout=30) in (0, -signal.SIGTERM), log.read_text()[-2000:]
        assert "Application shutdown complete." in log.read_text()
    finally:
        deployment.stop_all()
