"""A 2026-07-28 client's answer to a server's question lands on either of two gateway
worker processes, or on another replica (issue 34): the gateway's sealed `requestState`
opens in any process of the installation (its `ENCRYPTION_KEYS`), so every retry,
wherever it lands, reaches the server."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.harness.deployment import Deployment
from tests.harness.paths import RELAY_PROBE
from tests.harness.results import payload, text_of, use

# Gateways as processes on a SQLite file of their own: run once (the SQLite pass).
pytestmark = pytest.mark.once

SETUP = """
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

tenant = Tenant.objects.create(slug="asking")
toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
Server.objects.create(toolbox=toolbox, name="probe", command={python!r}, args=[{probe!r}],
                      pinning="off")
print(ApiKey.issue(tenant)[1])
"""
ANSWER = types.ElicitResult(action="accept", content={"name": "Ada"})
ROUNDS = 12


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    deployment = Deployment(tmp_path)
    deployment.migrate()
    yield deployment
    deployment.stop_all()


def worker_pids(metrics_dir: Path) -> set[str]:
    return {path.stem.rsplit("_", 1)[-1] for path in metrics_dir.glob("counter_*.db")}


async def _elicit(ctx: Any, params: Any) -> types.ElicitResult:
    return ANSWER  # declares elicitation; the test answers by hand


@asynccontextmanager
async def own_client(url: str, key: str) -> AsyncIterator[Client]:
    """A client (and TCP connection) of its own: either worker may take its calls."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), elicitation_callback=_elicit) as c,
    ):
        yield c


async def ask_probe(url: str, key: str, **retry: Any) -> Any:
    async with own_client(url, key) as client:
        return await client.session.call_tool(
            "use_tool", use("dev", "probe", "ask_form"), allow_input_required=True, **retry
        )


async def open_dev(url: str, key: str) -> None:
    async with own_client(url, key) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))


async def _rounds(url: str, key: str, retry_url: str | None = None) -> list[str]:
    """`ROUNDS` questions asked at `url`, each answered at `retry_url` (default `url`)."""
    await open_dev(url, key)
    texts = []
    for _ in range(ROUNDS):
        asked = await ask_probe(url, key)
        assert isinstance(asked, types.InputRequiredResult), asked
        answered = await ask_probe(
            retry_url or url,
            key,
            input_responses={"ask": ANSWER},
            request_state=asked.request_state,
        )
        assert isinstance(answered, types.CallToolResult)
        texts.append(text_of(answered))
    return texts


def test_a_retry_reaches_the_server_from_either_worker(deployment: Deployment) -> None:
    key = deployment.shell(SETUP.format(python=sys.executable, probe=RELAY_PROBE)).split()[-1]
    _, url, _ = deployment.start_gateway("gateway", "--workers", "2")
    texts = anyio.run(_rounds, url, key)
    assert texts == ['answered {"action":"accept","content":{"name":"Ada"}}'] * ROUNDS
    # Both workers served calls (each round's two calls on connections of their own).
    assert len(worker_pids(deployment.workdir / "store" / "metrics")) == 2


def test_a_retry_reaches_the_server_from_another_replica(deployment: Deployment) -> None:
    """Two gateways of one installation (one database, one shared store, one set of keys):
    asked on one, answered on the other, both ways."""
    key = deployment.shell(SETUP.format(python=sys.executable, probe=RELAY_PROBE)).split()[-1]
    _, first, _ = deployment.start_gateway("first")
    _, second, _ = deployment.start_gateway("second")
    there = anyio.run(_rounds, first, key, second)
    back = anyio.run(_rounds, second, key, first)
    assert there == back == ['answered {"action":"accept","content":{"name":"Ada"}}'] * ROUNDS
