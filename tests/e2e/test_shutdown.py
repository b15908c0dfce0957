"""The gateway as its own process: shutdown leaves no downstream process behind, also
when the gateway dies without a goodbye."""

from __future__ import annotations

import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from django.contrib import admin

from tests.harness.deployment import Deployment
from tests.harness.live import LiveGateway
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.procs import processes_with
from tests.harness.results import INITIALIZE_PARAMS, payload
from tests.harness.waits import wait_until

# Gateways as processes on a SQLite file of their own (tests.harness.deployment), whatever
# TEST_DATABASE_URL says: the same on every pass, so run once (the SQLite pass).
pytestmark = pytest.mark.once

SETUP_SCRIPT = """
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

tenant = Tenant.objects.create(slug="proc")
toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
for index in range(2):
    Server.objects.create(toolbox=toolbox, name="s" + str(index), position=index,
                          command={python!r}, args=[{fixture!r}, "--prefix", {marker!r}])
print(ApiKey.issue(tenant)[1])
"""


@pytest.fixture
def deployment(tmp_path) -> Iterator[Deployment]:
    deployment = Deployment(tmp_path)
    deployment.migrate()
    yield deployment
    deployment.stop_all()


def create_toolbox(deployment: Deployment, marker: str) -> str:
    script = SETUP_SCRIPT.format(python=sys.executable, fixture=FIXTURE_SERVER, marker=marker)
    return deployment.shell(script).split()[-1]


def open_dev(url: str, key: str) -> None:
    async def scenario() -> None:
        async with LiveGateway(url=url, app=None).session(key) as session:
            data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            assert data["servers_connected"] == 2

    anyio.run(scenario)


def test_sigterm_closes_every_downstream(deployment):
    marker = uuid.uuid4().hex
    key = create_toolbox(deployment, marker)
    process, url, log = deployment.start_gateway()
    open_dev(url, key)
    assert len(processes_with(marker)) == 2
    # The admin's static files stream asynchronously (no warning of Django's in the log).
    css = httpx2.get(url.removesuffix("/mcp") + "/static/admin/css/base.css", timeout=30)
    assert (css.status_code, css.headers["content-type"]) == (200, 'text/css; charset="utf-8"')
    assert css.text == (Path(admin.__file__).parent / "static/admin/css/base.css").read_text()
    process.send_signal(signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises the signal for its exit status.
    assert process.wait(timeout=30) in (0, -signal.SIGTERM)
    text = log.read_text()
    assert "Application shutdown complete" in text
    assert processes_with(marker) == []
    # The gateway's two SDK managers (SSE and JSON answers) start and stop as one.
    assert text.count("StreamableHTTP session manager started") == 1
    assert text.count("StreamableHTTP session manager shutting down") == 1
    assert "StreamingHttpResponse must consume synchronous iterators" not in text
    assert "Warning:" not in text, text  # ServeStatic's own checks run (it is installed)


def test_children_exit_when_the_gateway_is_killed(deployment):
    marker = uuid.uuid4().hex
    key = create_toolbox(deployment, marker)
    process, url, _ = deployment.start_gateway()
    open_dev(url, key)
    assert len(processes_with(marker)) == 2
    process.kill()
    process.wait(timeout=30)
    # Their stdin closed with the gateway; they must notice and exit on their own.
    wait_until(lambda: processes_with(marker) == [], 20, "orphaned downstream servers to exit")


def test_a_stubborn_server_and_its_children_are_killed_at_shutdown(deployment):
    marker = uuid.uuid4().hex
    script = SETUP_SCRIPT.replace('"--prefix"', '"--stubborn", "--prefix"').format(
        python=sys.executable, fixture=FIXTURE_SERVER, marker=marker
    )
    key = deployment.shell(script).split()[-1]
    process, url, _ = deployment.start_gateway()
    open_dev(url, key)
    assert len(processes_with(marker)) == 4  # two servers, each with a child
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) in (0, -signal.SIGTERM)
    assert processes_with(marker) == []


def test_sigterm_drains_first_readyz_503_while_requests_are_still_served(deployment):
    """Behind a load balancer: the first SIGTERM turns /readyz to 503 and the replica goes
    on serving for WORKBENCH_DRAIN_SECONDS, then shuts down as above."""
    marker = uuid.uuid4().hex
    key = create_toolbox(deployment, marker)
    deployment.env_extra["WORKBENCH_DRAIN_SECONDS"] = "6"
    process, url, log = deployment.start_gateway()
    open_dev(url, key)
    base = url.removesuffix("/mcp")
    assert httpx2.get(f"{base}/readyz").json()["status"] == "ok"
    process.send_signal(signal.SIGTERM)
    wait_until(
        lambda: httpx2.get(f"{base}/readyz").status_code == 503, 10, "readyz to say draining"
    )
    assert httpx2.get(f"{base}/readyz").json()["status"] == "draining"
    served = httpx2.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS},
        headers={"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"},
    )
    assert served.status_code == 200  # still serving while the balancer moves away
    assert process.wait(timeout=30) in (0, -signal.SIGTERM)
    text = log.read_text()
    assert "SIGTERM: draining (/readyz answers 503, requests still served) for 6.0 s" in text
    assert "Application shutdown complete" in text
    assert processes_with(marker) == []
