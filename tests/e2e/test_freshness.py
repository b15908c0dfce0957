"""On the default settings (the embedded store, no Redis), a change made by any process —
a command beside a running gateway, another worker — reaches every gateway process by
its next request, and what a key opened through one process is open through another."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator

import anyio
import httpx2
import pytest

from tests.harness.deployment import Deployment
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.results import INITIALIZE_PARAMS, raw_rpc, refusal_reason, use

# Gateways as processes on a SQLite file of their own (tests.harness.deployment), whatever
# TEST_DATABASE_URL says: the same on every pass, so run once (the SQLite pass).
pytestmark = pytest.mark.once

SETUP = """
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

tenant = Tenant.objects.create(slug="fresh")
toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
Server.objects.create(toolbox=toolbox, name="fixture", command={python!r},
                      args=[{fixture!r}, "--prefix", {marker!r}])
print(*(ApiKey.issue(tenant)[1] for _ in range(3)))
"""
OPEN = {"name": "open_toolbox", "arguments": {"toolbox": "dev"}}
ECHO = {"name": "use_tool", "arguments": use("dev", "fixture", "echo", {"text": "hi"})}


@pytest.fixture
def deployment(tmp_path) -> Iterator[Deployment]:
    deployment = Deployment(tmp_path)  # no CACHE_URL: the product's default store
    deployment.migrate()
    yield deployment
    deployment.stop_all()


def configure(deployment: Deployment) -> tuple[str, list[str]]:
    marker = uuid.uuid4().hex
    script = SETUP.format(python=sys.executable, fixture=FIXTURE_SERVER, marker=marker)
    return marker, deployment.shell(script).split()[-3:]


async def initialize(http: httpx2.AsyncClient, url: str, key: str) -> httpx2.Response:
    return await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS, key=key)


def refusal(response: httpx2.Response) -> str:
    return refusal_reason(response, 401)


def test_commands_beside_a_running_gateway_take_effect_by_the_next_request(deployment, tmp_path):
    _, (key, other_key, third_key) = configure(deployment)
    _, url, _ = deployment.start_gateway()
    config = tmp_path / "ops.json"
    config.write_text(
        json.dumps({"toolboxes": {"ops": {"description": "Operations", "mcpServers": {}}}})
    )

    async def scenario() -> None:
        async with httpx2.AsyncClient(timeout=60) as http:
            first = await initialize(http, url, key)
            sid = first.headers["mcp-session-id"]
            assert "**ops**" not in first.text
            assert (
                "servers_connected"
                in (await raw_rpc(http, url, "tools/call", OPEN, key=key, session_id=sid)).text
            )

            await anyio.to_thread.run_sync(
                deployment.manage, "import_config", str(config), "--tenant", "fresh"
            )
            assert "**ops**" in (await initialize(http, url, key)).text

            await anyio.to_thread.run_sync(deployment.manage, "revoke_api_key", key)
            assert refusal(await initialize(http, url, key)) == "revoked_api_key"
            # A session opened before the revocation is refused as well.
            call = await raw_rpc(http, url, "tools/call", ECHO, key=key, session_id=sid)
            assert refusal(call) == "revoked_api_key"

            assert (await initialize(http, url, other_key)).status_code == 200
            prefix = other_key.split("_")[1]
            await anyio.to_thread.run_sync(
                deployment.shell,
                "from django.utils import timezone; from toolboxes.models import ApiKey; "
                f"k = ApiKey.objects.get(prefix={prefix!r}); "
                "k.expires_at = timezone.now(); k.save()",
            )
            assert refusal(await initialize(http, url, other_key)) == "expired_api_key"

            assert (await initialize(http, url, third_key)).status_code == 200
            await anyio.to_thread.run_sync(
                deployment.shell,
                "from toolboxes.models import Tenant; t = Tenant.objects.get(slug='fresh'); "
                "t.is_active = False; t.save()",
            )
            assert refusal(await initialize(http, url, third_key)) == "inactive_tenant"

    anyio.run(scenario)


def test_processes_and_workers_share_open_state_and_revocation(deployment):
    """`a` is one process; `b` runs 2 uvicorn workers, and each request on a fresh
    connection lands on whichever of them accepts it."""
    marker, (key, *_) = configure(deployment)
    _, url_a, _ = deployment.start_gateway("a")
    _, url_b, _ = deployment.start_gateway("b", "--workers", "2")

    async def fresh(url: str, call: dict) -> httpx2.Response:
        async with httpx2.AsyncClient(timeout=60) as http:  # a new connection each time
            return await raw_rpc(http, url, "tools/call", call, key=key)

    async def scenario() -> None:
        assert "servers_connected" in (await fresh(url_a, OPEN)).text
        for _ in range(8):
            assert f"{marker}hi" in (await fresh(url_b, ECHO)).text
        await anyio.to_thread.run_sync(deployment.manage, "revoke_api_key", key)
        for url in (url_a, *[url_b] * 8):
            assert refusal(await fresh(url, ECHO)) == "revoked_api_key"

    anyio.run(scenario)
