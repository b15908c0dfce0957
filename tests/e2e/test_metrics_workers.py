"""Metrics and the call log with real uvicorn processes: two workers' counts add up in one
scrape, and a locked database slows no call (its call log entries are dropped, counted).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness.deployment import DATABASE, Deployment
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.results import INITIALIZE_PARAMS, raw_rpc, use
from tests.harness.waits import wait_until

# Gateways as processes on a SQLite file of their own (tests.harness.deployment), whatever
# TEST_DATABASE_URL says: the same on every pass, so run once (the SQLite pass).
pytestmark = pytest.mark.once

SETUP = """
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

tenant = Tenant.objects.create(slug="workers")
toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
# Pinning off: recording a first connection's tool definitions changes the configuration
# (a reload from the database) after the warm-up, which the locked database would block.
Server.objects.create(toolbox=toolbox, name="fixture", command={python!r}, args=[{fixture!r}],
                      pinning="off")
print(ApiKey.issue(tenant)[1])
"""
ECHO = {"name": "use_tool", "arguments": use("dev", "fixture", "echo", {"text": "hi"})}
CALL_LABELS = {"tenant": "workers", "toolbox": "dev", "server": "fixture", "tool": "echo"}


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    deployment = Deployment(tmp_path)
    deployment.migrate()
    yield deployment
    deployment.stop_all()


def scrape(url: str) -> dict[str, float]:
    """{sample name: value} of the workers tenant's echo calls and of the call log."""
    text = httpx2.get(url.removesuffix("/mcp") + "/metrics").text
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            ours = sample.labels.get("outcome", "ok") == "ok" and all(
                sample.labels.get(name) == value for name, value in CALL_LABELS.items()
            )
            if ours or sample.name.startswith("workbench_call_log_"):
                found[sample.name] = sample.value
    return found


class Session:
    """A 2025-11-25 session over raw JSON-RPC, with dev open."""

    def __init__(self, http: httpx2.AsyncClient, url: str, key: str, sid: str) -> None:
        self.http, self.url, self.key, self.sid = http, url, key, sid

    @classmethod
    async def start(cls, http: httpx2.AsyncClient, url: str, key: str) -> Session:
        init = await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS, key=key)
        session = cls(http, url, key, init.headers["mcp-session-id"])
        open_dev = {"name": "open_toolbox", "arguments": {"toolbox": "dev"}}
        opened = await raw_rpc(http, url, "tools/call", open_dev, key=key, session_id=session.sid)
        assert "servers_connected" in opened.text
        return session

    async def echo(self, http: httpx2.AsyncClient | None = None) -> None:
        answer = await raw_rpc(
            http or self.http, self.url, "tools/call", ECHO, key=self.key, session_id=self.sid
        )
        assert answer.status_code == 200 and '"isError":true' not in answer.text


async def calls_on_new_connections(url: str, key: str, count: int) -> None:
    """`count` echo calls, each on a new TCP connection: either worker may accept it."""
    async with httpx2.AsyncClient(timeout=60) as http:
        session = await Session.start(http, url, key)
    for _ in range(count):
        async with httpx2.AsyncClient(timeout=60) as fresh:
            await session.echo(fresh)


def worker_pids(metrics_dir: Path) -> set[str]:
    return {path.stem.rsplit("_", 1)[-1] for path in metrics_dir.glob("counter_*.db")}


def test_two_workers_counts_add_up(deployment: Deployment) -> None:
    key = deployment.shell(SETUP.format(python=sys.executable, fixture=FIXTURE_SERVER)).split()[-1]
    _, url, _ = deployment.start_gateway("gateway", "--workers", "2")
    metrics_dir = deployment.workdir / "store" / "metrics"
    made = 0
    # Calls on new connections until both workers have served some (bounded).
    for _ in range(10):
        anyio.run(lambda: calls_on_new_connections(url, key, 6))
        made += 6
        if len(worker_pids(metrics_dir)) == 2:
            break
    assert len(worker_pids(metrics_dir)) == 2, "one worker served every call"
    for _ in range(3):  # whichever worker answers the scrape, it counts every worker's calls
        assert scrape(url)["workbench_tool_calls_total"] == made
    assert scrape(url)["workbench_tool_call_duration_seconds_count"] == made


def test_a_locked_database_slows_no_call_and_drops_are_counted(deployment: Deployment) -> None:
    """Also: with LOG_FORMAT=json every line the process writes is one JSON object."""
    deployment.env_extra.update(
        {"WORKBENCH_CALL_LOG_QUEUE": "3", "WORKBENCH_CALL_LOG_BATCH": "2", "LOG_FORMAT": "json"}
    )
    key = deployment.shell(SETUP.format(python=sys.executable, fixture=FIXTURE_SERVER)).split()[-1]
    _, url, log = deployment.start_gateway()
    fake_key = "wb_abcdefgh_" + "s" * 43
    refused = httpx2.post(url, json={}, headers={"Authorization": f"Bearer {fake_key}"})
    assert refused.status_code == 401
    lock = sqlite3.connect(deployment.workdir / DATABASE, isolation_level=None)

    async def scenario() -> None:
        async with httpx2.AsyncClient(timeout=60) as http:
            session = await Session.start(http, url, key)
            await session.echo()  # caches warm: no request of this key reads the database now
            wait_until(lambda: scrape(url).get("workbench_call_log_written_total") == 2, 15, "rows")
            lock.execute("BEGIN EXCLUSIVE")  # no process may read or write the database now
            try:
                for _ in range(20):
                    await session.echo()
                # Every call answered while the lock was held: none waited for the database.
                assert scrape(url)["workbench_call_log_dropped_total"] > 0
            finally:
                lock.execute("ROLLBACK")

    try:
        anyio.run(scenario)
    finally:
        lock.close()
    # Each of the 22 entries (open_toolbox, 21 use_tool) is accounted for exactly once:
    # written, lost with its batch (the write timed out on the lock), or dropped.
    wait_until(
        lambda: (
            sum(
                scrape(url).get(name, 0)
                for name in (
                    "workbench_call_log_written_total",
                    "workbench_call_log_write_failures_total",
                    "workbench_call_log_dropped_total",
                )
            )
            == 22
        ),
        30,
        "every call log entry accounted for",
    )
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    messages = [line["message"] for line in lines]
    assert any(message.startswith("Uvicorn running on") for message in messages)
    assert any('"POST /mcp HTTP/1.1" 200' in message for message in messages)  # access
    [refusal] = [line for line in lines if line["logger"] == "workbench.auth"]
    assert refusal["key_prefix"] == "abcdefgh" and fake_key not in log.read_text()
    assert {"time", "level", "logger", "message"} <= set(refusal)
