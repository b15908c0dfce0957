"""Fair shares: open_toolbox has buckets of its own, checked before any connection is
made; a key has a bound on requests in flight; limits are on by default; buckets of the
default (embedded) store hold across processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Iterator

import httpx2
import pytest

from mcp_gateway.options import GatewayOptions
from tests.harness.live import LiveGateway, running_gateway
from tests.harness.procs import processes_with
from tests.harness.results import error_of, payload, refusal_json, text_of, use
from tests.harness.waits import eventually

pytestmark = pytest.mark.anyio


@pytest.fixture
def strict_gateway(transactional_db, settings) -> Iterator[LiveGateway]:
    """A gateway with tight limits: two opens per key, then one per 10,000 s; two requests
    in flight per key."""
    settings.WORKBENCH_OPEN_KEY_RATE_LIMIT = 0.0001
    settings.WORKBENCH_OPEN_KEY_RATE_BURST = 2
    settings.WORKBENCH_KEY_MAX_IN_FLIGHT = 2  # a 2025 client may overlap two POSTs itself
    with running_gateway() as live:
        yield live


async def test_open_is_rate_limited_before_any_connection(strict_gateway, amake_setup):
    marker = uuid.uuid4().hex
    setup = await amake_setup()
    other = await amake_setup("other")
    first = await setup.atoolbox("first")
    await setup.afixture_server(first, "s", tool_filters=["echo"])
    late = await setup.atoolbox("late")
    await setup.afixture_server(late, "s", "--prefix", marker)
    await other.afixture_server(await other.atoolbox("first"), "s", tool_filters=["echo"])
    async with strict_gateway.session(setup.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "first"}))
        payload(await session.call_tool("open_toolbox", {"toolbox": "first"}))
        refused = await session.call_tool("open_toolbox", {"toolbox": "late"})
        # use_tool has buckets of its own: still allowed.
        echoed = await session.call_tool("use_tool", use("first", "s", "echo", {"text": "x"}))
    async with strict_gateway.session(other.key) as session:  # another tenant's own bucket
        other_open = payload(await session.call_tool("open_toolbox", {"toolbox": "first"}))
    code, text = error_of(refused)
    assert code == "RATE_LIMITED"
    details = refused.structured_content["error"]["details"]
    assert 9000 < details["retry_after"] <= 10000  # the bucket refills as the test runs
    assert text == (
        f"Error opening toolbox 'late': rate limit reached; retry in {details['retry_after']:.2f}s"
    )
    assert processes_with(marker) == []  # refused before its server was started
    assert text_of(echoed) == "x"
    assert other_open["servers_connected"] == 1


async def test_a_key_has_a_bound_on_requests_in_flight(strict_gateway, amake_setup):
    setup = await amake_setup()
    other = await amake_setup("other")
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "s", tool_filters=["slow", "echo"])
    await other.afixture_server(await other.atoolbox("dev"), "s", tool_filters=["echo"])
    pool = strict_gateway.gateway.pool
    async with strict_gateway.session(setup.key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        # The open's request leaves the count a moment after its answer reached us.
        in_flight = strict_gateway.gateway.in_flight
        await eventually(lambda: not in_flight._counts, 10, "the open to leave the count")
        slow = [
            asyncio.ensure_future(
                session.call_tool("use_tool", use("dev", "s", "slow", {"seconds": 2}))
            )
            for _ in range(2)
        ]
        await eventually(
            lambda: sum(conn.in_flight for conn in pool.connections()) == 2, 10, "the slow calls"
        )
        headers = {"Authorization": f"Bearer {setup.key}", "Accept": "application/json"}
        async with httpx2.AsyncClient(headers=headers, timeout=10) as http:
            refused = await http.post(
                strict_gateway.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
            )
        async with strict_gateway.session(other.key) as other_session:
            await other_session.call_tool("open_toolbox", {"toolbox": "dev"})
            other_echo = await other_session.call_tool(
                "use_tool", use("dev", "s", "echo", {"text": "fine"})
            )
        assert [text_of(await call) for call in slow] == ["slept", "slept"]
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    assert refused.json() == refusal_json(
        429,
        "rate_limited",
        "This API key has 2 requests in flight, its limit: retry when one has answered.",
        code="RATE_LIMITED",
        details={"retry_after": 1},
    )
    assert text_of(other_echo) == "fine"


def test_limits_are_on_by_default():
    defaults = GatewayOptions()
    assert defaults.tenant_rate_limit > 0 and defaults.key_rate_limit > 0
    assert defaults.open_tenant_rate_limit > 0 and defaults.open_key_rate_limit > 0
    assert defaults.key_max_in_flight > 0


TAKE = """
import asyncio, sys
from mcp_gateway.metatools.ratelimit import DiskBuckets, Limit
buckets = DiskBuckets(sys.argv[1])
print(asyncio.run(buckets.take([("wb:rate:key:1", Limit(0.001, 2))])))
"""


async def test_default_buckets_hold_across_processes(tmp_path):
    from mcp_gateway.metatools.ratelimit import DiskBuckets, Limit

    here = DiskBuckets(tmp_path)
    assert await here.take([("wb:rate:key:1", Limit(0.001, 2))]) == 0
    # Another process takes the second token from the same bucket...
    other = subprocess.run(
        [sys.executable, "-c", TAKE, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert float(other.stdout) == 0
    # ...so this one has none left: the wait is the next token's 1,000 s, less what refilled
    # while the other process ran (seconds on a loaded machine).
    assert await here.take([("wb:rate:key:1", Limit(0.001, 2))]) > 900
    await here.close()
