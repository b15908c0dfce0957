"""Two gateway processes sharing one database and one Redis: a session opened on one is
open on the other, and a key revoked from a third process stops working on both at once."""

from __future__ import annotations

import contextlib
import os
import random
import sys
import uuid
from collections.abc import Iterator

import anyio
import httpx2
import pytest

from tests.harness.deployment import Deployment
from tests.harness.markers import requires_redis
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.results import INITIALIZE_PARAMS, raw_rpc, refusal_reason, use
from tests.harness.services import REDIS_URL

# Gateways as processes on a SQLite file of their own (tests.harness.deployment), whatever
# TEST_DATABASE_URL says: the same on every pass, so run once (the SQLite pass).
pytestmark = [requires_redis, pytest.mark.once]

SETUP = """
from toolboxes.models import ApiKey, Server, Tenant, Toolbox
tenant = Tenant.objects.create(slug="multi")
toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
Server.objects.create(toolbox=toolbox, name="fixture", command={python!r},
                      args=[{fixture!r}, "--prefix", {marker!r}])
print(ApiKey.issue(tenant)[1])
"""

UNLIMITED = (
    "WORKBENCH_TENANT_RATE_LIMIT",
    "WORKBENCH_KEY_RATE_LIMIT",
    "WORKBENCH_OPEN_TENANT_RATE_LIMIT",
    "WORKBENCH_OPEN_KEY_RATE_LIMIT",
)


@pytest.fixture
def deployment(tmp_path) -> Iterator[Deployment]:
    # A database number of its own, so that runs never see each other's entries.
    # No rate limits: these tests count connections and shared state, not the budget.
    deployment = Deployment(
        tmp_path,
        cache_url=f"{REDIS_URL}/{random.randint(1, 15)}",
        env_extra=dict.fromkeys(UNLIMITED, "0"),
    )
    deployment.migrate()
    yield deployment
    deployment.stop_all()


def test_open_state_and_revocation_are_shared(deployment):
    marker = uuid.uuid4().hex
    script = SETUP.format(python=sys.executable, fixture=FIXTURE_SERVER, marker=marker)
    key = deployment.shell(script).split()[-1]
    _, url_a, _ = deployment.start_gateway("a")
    _, url_b, _ = deployment.start_gateway("b")
    echo = {"name": "use_tool", "arguments": use("dev", "fixture", "echo", {"text": "hi"})}

    async def scenario() -> None:
        async with httpx2.AsyncClient(timeout=60) as http:
            init = await raw_rpc(http, url_a, "initialize", INITIALIZE_PARAMS, key=key)
            sid = init.headers["mcp-session-id"]
            open_dev = {"name": "open_toolbox", "arguments": {"toolbox": "dev"}}
            opened = await raw_rpc(http, url_a, "tools/call", open_dev, key=key, session_id=sid)
            assert '"servers_connected' in opened.text
            # The same session, served by the other process.
            on_b = await raw_rpc(http, url_b, "tools/call", echo, key=key, session_id=sid)
            assert f"{marker}hi" in on_b.text
            # Revoked from a third process: both gateways refuse it at once.
            deployment.shell(
                "from toolboxes.models import ApiKey; "
                f"ApiKey.objects.filter(prefix={key.split('_')[1]!r}).revoke()"
            )
            for url in (url_a, url_b):
                refused = await raw_rpc(http, url, "tools/call", echo, key=key, session_id=sid)
                assert refusal_reason(refused, 401) == "revoked_api_key"

    anyio.run(scenario)


def sockets_of(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return count


def test_requests_do_not_open_a_redis_connection_each(deployment):
    marker = uuid.uuid4().hex
    script = SETUP.format(python=sys.executable, fixture=FIXTURE_SERVER, marker=marker)
    key = deployment.shell(script).split()[-1]
    process, url, _ = deployment.start_gateway("gateway")
    echo = {"name": "use_tool", "arguments": use("dev", "fixture", "echo", {"text": "hi"})}

    async def requests(count: int) -> None:
        async with httpx2.AsyncClient(timeout=60) as http:
            init = await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS, key=key)
            sid = init.headers["mcp-session-id"]
            open_dev = {"name": "open_toolbox", "arguments": {"toolbox": "dev"}}
            await raw_rpc(http, url, "tools/call", open_dev, key=key, session_id=sid)
            for _ in range(count):
                answer = await raw_rpc(http, url, "tools/call", echo, key=key, session_id=sid)
                assert f"{marker}hi" in answer.text

    async def sessions(count: int, calls: int) -> None:
        async with anyio.create_task_group() as group:
            for _ in range(count):
                group.start_soon(requests, calls)

    anyio.run(sessions, 1, 5)  # warm: the store's connections exist now
    before = sockets_of(process.pid)
    anyio.run(sessions, 20, 10)
    # A bounded pool, not one connection per request (worker threads may add a few).
    assert sockets_of(process.pid) - before < 40
