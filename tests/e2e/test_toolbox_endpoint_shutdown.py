"""The gateway as its own process with a 2026-07-28 client listening on a toolbox endpoint:
a listen stream never ends by itself and uvicorn waits for every open response before it
stops, so the process ends such streams as it starts to stop (SIGINT, or SIGTERM once
drained: `workbench_site.drain`). The client's stream ends gracefully and the process exits
within the bound (it would otherwise wait for the client, or for
`--timeout-graceful-shutdown`)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator

import anyio
import pytest

from tests.harness.deployment import Deployment
from tests.harness.live import LiveGateway
from tests.harness.paths import FIXTURE_SERVER

# Gateways as processes on a SQLite file of their own (tests.harness.deployment): run once.
pytestmark = pytest.mark.once

SETUP_SCRIPT = """
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

tenant = Tenant.objects.create(slug="proc")
toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
Server.objects.create(toolbox=toolbox, name="files", command={python!r}, args=[{fixture!r}])
print(ApiKey.issue(tenant)[1])
"""
STOP_SECONDS = 30


@pytest.fixture
def deployment(tmp_path) -> Iterator[Deployment]:
    deployment = Deployment(tmp_path)
    deployment.migrate()
    yield deployment
    deployment.stop_all()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_stopping_ends_the_listen_streams_gracefully(deployment, signum):
    key = deployment.shell(
        SETUP_SCRIPT.format(python=sys.executable, fixture=FIXTURE_SERVER)
    ).split()[-1]
    process, url, log = deployment.start_gateway()
    dev = LiveGateway(url=f"{url}/t/proc/toolboxes/dev")

    async def listen_then_stop() -> list[object]:
        async with dev.client(key) as client, client.listen(tools_list_changed=True) as stream:
            process.send_signal(signum)
            with anyio.fail_after(STOP_SECONDS):
                return [event async for event in stream]  # SubscriptionLost if dropped

    assert anyio.run(listen_then_stop) == []
    assert process.wait(timeout=STOP_SECONDS) in (0, -signum)
    assert "Application shutdown complete" in log.read_text()
