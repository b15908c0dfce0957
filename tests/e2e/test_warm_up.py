"""A replica that restarts starts again the servers it ran before it says it is ready
(issue 23's warm-up): its tenants' first calls after a rolling restart find them."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import httpx2
import pytest

from tests.e2e.test_shutdown import create_toolbox, open_dev
from tests.harness.deployment import Deployment
from tests.harness.procs import descendants, processes_with
from tests.harness.waits import wait_until

pytestmark = pytest.mark.once  # gateways on a SQLite file of their own: the SQLite pass

REMEMBERED = "warm-up: replica r1 remembers 2 server(s) to start at its next start"


def servers(pid: int, marker: str) -> set[int]:
    """The servers marked `marker` running under the gateway `pid` (not their sandbox's)."""
    return set(descendants(pid)) & set(processes_with(marker))


def readyz(base: str) -> tuple[int, str]:
    try:
        answer = httpx2.get(f"{base}/readyz", timeout=5)
    except httpx2.HTTPError:
        return 0, ""
    return answer.status_code, answer.json()["status"]


def test_a_restarted_replica_starts_its_servers_before_it_is_ready(tmp_path: Path) -> None:
    deployment = Deployment(tmp_path, env_extra={"WORKBENCH_REPLICA": "r1"})
    deployment.migrate()
    marker = f"wb-warm-{uuid.uuid4().hex[:8]}:"
    key = create_toolbox(deployment, marker)
    try:
        first, url, log = deployment.start_gateway("first")
        open_dev(url, key)  # starts the toolbox's two servers
        wait_until(lambda: REMEMBERED in log.read_text(), 30, "the servers remembered")
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=30)

        second, url, log = deployment.start_gateway("second")
        base = url.removesuffix("/mcp")
        seen: set[str] = set()

        def ready() -> bool:
            status, said = readyz(base)
            seen.add(said)
            return status == 200

        wait_until(ready, 60, "the restarted replica ready")
        # Ready means warm: both servers run before any client asked for them.
        assert len(servers(second.pid, marker)) == 2, log.read_text()[-2000:]
        assert "warm-up: replica r1 started 2 of 2 server(s) in " in log.read_text()
        assert seen <= {"", "warming", "ok"}, seen

        open_dev(url, key)  # the warm servers serve it: no new process
        assert len(servers(second.pid, marker)) == 2
    finally:
        deployment.stop_all()
