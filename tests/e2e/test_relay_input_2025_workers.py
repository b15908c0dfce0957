"""A 2025-11-25 client's answer to a server's question, asked on its call's stream, lands on
another process than the call's (issue 34): another replica of the installation, or either
of two worker processes. The front door there leads it through the shared store to the
process whose call waits for it. And the rule for a 2026-07-28 client whose call a server
spoken to in 2025-11-25 holds: its retry is answered by the process that holds it only."""

from __future__ import annotations

import json
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
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.harness.deployment import Deployment
from tests.harness.paths import RELAY_PROBE
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.servers import server_process

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
REMOTE_SETUP = """
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

tenant = Tenant.objects.create(slug="asking")
toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
Server.objects.create(toolbox=toolbox, name="probe", transport="streamable-http", url={url!r},
                      pinning="off")
print(ApiKey.issue(tenant)[1])
"""
ROUNDS = 8
ANSWERED = 'answered {"action":"accept","content":{"name":"Ada"}}'


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    deployment = Deployment(tmp_path)
    deployment.migrate()
    yield deployment
    deployment.stop_all()


class AnswersElsewhere(httpx2.AsyncBaseTransport):
    """Sends the client's answers (JSON-RPC responses) to `elsewhere`'s port, the rest as
    asked; counts the answers it sent there."""

    def __init__(self, elsewhere: str) -> None:
        self.port = httpx2.URL(elsewhere).port
        self.inner = httpx2.AsyncHTTPTransport()
        self.rerouted = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST":
            body = await request.aread()
            message = json.loads(body) if body else None
            if isinstance(message, dict) and "method" not in message and "id" in message:
                self.rerouted += 1
                request = httpx2.Request(
                    "POST",
                    request.url.copy_with(port=self.port),
                    headers=request.headers,
                    content=body,
                )
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _elicit(context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


@asynccontextmanager
async def _session(
    url: str, key: str, transport: httpx2.AsyncBaseTransport | None = None
) -> AsyncIterator[ClientSession]:
    """A 2025-11-25 session of its own (a TCP connection per request: either worker may
    take each one) that declared elicitation."""
    headers = {"Authorization": f"Bearer {key}"}
    transport = transport or httpx2.AsyncHTTPTransport(
        limits=httpx2.Limits(max_keepalive_connections=0)
    )
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, transport=transport) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write, elicitation_callback=_elicit) as session,
    ):
        await session.initialize()
        yield session


async def _rounds(
    url: str, key: str, transport: httpx2.AsyncBaseTransport | None = None
) -> list[str]:
    texts = []
    with anyio.fail_after(180):
        async with _session(url, key, transport) as session:
            payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            for _ in range(ROUNDS):
                result = await session.call_tool("use_tool", use("dev", "probe", "ask_form"))
                texts.append(text_of(result))
    return texts


def test_an_answer_posted_to_another_replica_reaches_the_call(deployment: Deployment) -> None:
    """Every answer sent to the other replica of one installation (one database, one shared
    store, one set of keys), both ways."""
    key = deployment.shell(SETUP.format(python=sys.executable, probe=RELAY_PROBE)).split()[-1]
    _, first, _ = deployment.start_gateway("first")
    _, second, _ = deployment.start_gateway("second")
    there, back = AnswersElsewhere(second), AnswersElsewhere(first)
    assert anyio.run(_rounds, first, key, there) == [ANSWERED] * ROUNDS
    assert anyio.run(_rounds, second, key, back) == [ANSWERED] * ROUNDS
    assert there.rerouted == back.rerouted == ROUNDS


def test_an_answer_reaches_the_call_from_either_worker(deployment: Deployment) -> None:
    key = deployment.shell(SETUP.format(python=sys.executable, probe=RELAY_PROBE)).split()[-1]
    _, url, _ = deployment.start_gateway("gateway", "--workers", "2")
    assert anyio.run(_rounds, url, key) == [ANSWERED] * ROUNDS


async def _held_then_retried(asked_at: str, retried_at: str, key: str) -> list[Any]:
    """A 2026-07-28 client asked at `asked_at`, its retry sent to `retried_at`, then to
    `asked_at`."""
    headers = {"Authorization": f"Bearer {key}"}
    answer = {"ask": types.ElicitResult(action="accept", content={"name": "Ada"})}
    results: list[Any] = []
    with anyio.fail_after(120):
        for url in (asked_at, retried_at, asked_at):
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                Client(
                    streamable_http_client(url, http_client=http), elicitation_callback=_elicit
                ) as client,
            ):
                if not results:
                    payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
                    asked = await client.session.call_tool(
                        "use_tool", use("dev", "probe", "ask_form"), allow_input_required=True
                    )
                    assert isinstance(asked, types.InputRequiredResult), asked
                    results.append(asked)
                    continue
                results.append(
                    await client.session.call_tool(
                        "use_tool",
                        use("dev", "probe", "ask_form"),
                        input_responses=answer,
                        request_state=results[0].request_state,
                        allow_input_required=True,
                    )
                )
    return results


def test_a_held_calls_retry_is_answered_by_its_own_replica_only(deployment: Deployment) -> None:
    with server_process("relay_probe.py") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        key = deployment.shell(REMOTE_SETUP.format(url=url)).split()[-1]
        _, first, _ = deployment.start_gateway("first")
        _, second, _ = deployment.start_gateway("second")
        _, elsewhere, home = anyio.run(_held_then_retried, first, second, key)
    assert error_of(elsewhere) == (
        "INVALID_PARAMETERS",
        "Error executing tool 'ask_form' in server 'probe' (toolbox 'dev'): the server's "
        "question waits on another process of the gateway, or no longer; call the tool "
        "again without the request state",
    )
    assert text_of(home) == ANSWERED
