"""Input a server spoken to in 2025-11-25 asks for (issue 34): a remote server, and a stdio
server on the SDK 1.x (which does not speak 2026-07-28), which ask with a request during the
call (`elicitation/create`, `sampling/createMessage`, `roots/list`) on their connection,
shared by the tenant's callers.

The connection declares the calling client's capabilities (the pool's connection for its
set: `test_relay_declared.py`) and answers each request for the one call in flight on it:
a 2025-11-25 client that declared the capability is asked on its call's stream and the
server gets its answer; a 2026-07-28 client is asked by an input-required result while the
server's request waits, and its retry answers it; a client that declared nothing is served
by a connection that declared nothing, and gets the server's own answer to that; with a
call in flight on its set's connection, an asking call gets a connection of its own rather
than a guess."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings

from tests.e2e.test_relay_input import ASKS, FORM, Answers, answered
from tests.harness.live import TenantSetup, make_tenant_setup
from tests.harness.paths import SERVERS
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.servers import server_process
from tests.harness.waits import eventually
from toolboxes.models import Server

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("relay_input_2025_servers")]

METHODS = {
    "ask_form": "elicitation/create",
    "ask_url": "elicitation/create",
    "ask_sample": "sampling/createMessage",
    "ask_roots": "roots/list",
}


def failed(tool: str, reason: str) -> tuple[str, str]:
    return (
        "DOWNSTREAM_ERROR",
        f"Error executing tool '{tool}' in server 'probe' (toolbox 'dev'): {reason}",
    )


OLD_PYTHON = str(Path(settings.BASE_DIR) / "tests" / ".mcp1-venv" / "bin" / "python")
OLD_PROBE = str(SERVERS / "old_probe.py")


@pytest.fixture(scope="module")
def world(module_db) -> Iterator[TenantSetup]:
    """The probe as a remote server (Streamable HTTP, stateful, spoken to in 2025-11-25),
    and `old`: tests/servers/old_probe.py on the SDK 1.x, over stdio."""
    with server_process("relay_probe.py") as port:
        setup = make_tenant_setup("relayremote")
        toolbox = setup.toolbox("dev")
        Server.objects.create(
            toolbox=toolbox,
            name="probe",
            transport="streamable-http",
            url=f"http://127.0.0.1:{port}/mcp",
            pinning="off",
        )
        Server.objects.create(
            toolbox=toolbox, name="old", command=OLD_PYTHON, args=[OLD_PROBE], pinning="off"
        )
        yield setup


@pytest.fixture
def caller(world) -> TenantSetup:
    return world.new_key()


@pytest.mark.parametrize("tool", list(ASKS))
async def test_a_2025_client_answers_a_2025_servers_request(module_gateway, caller, tool):
    answers = Answers()
    async with module_gateway.session(caller.key, **answers.callbacks()) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool("use_tool", use("dev", "probe", tool))
    assert answered(result) == ASKS[tool][0]
    assert len(answers.asked) == 1


@pytest.mark.parametrize("tool", ["ask_form", "ask_sample", "ask_roots"])
async def test_a_stdio_server_on_the_old_sdk_asks_a_2025_client(module_gateway, caller, tool):
    answers = Answers()
    async with module_gateway.session(caller.key, **answers.callbacks()) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool("use_tool", use("dev", "old", tool))
    assert answered(result) == ASKS[tool][0]
    assert len(answers.asked) == 1


@pytest.mark.parametrize("tool", list(ASKS))
async def test_a_client_that_declared_nothing_gets_the_servers_own_answer(
    module_gateway, caller, tool
):
    """The server sees that the client declared nothing (no connection claims more for
    it), and answers as it answers such a client directly: its own refusal here."""
    async with module_gateway.session(caller.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool("use_tool", use("dev", "probe", tool))
    assert error_of(result) == failed(
        tool, f"Client did not declare the {ASKS[tool][1]} capability"
    )
    assert result.structured_content is not None
    assert result.structured_content["error"]["details"]["downstream_code"] == -32021


@pytest.mark.parametrize("tool", list(ASKS))
async def test_a_2026_client_answers_a_2025_servers_request(module_gateway, caller, tool):
    """The server's request held, asked as an input-required result; the retry's answer
    reaches the waiting server (the SDK's client drives the retries)."""
    answers = Answers()
    async with module_gateway.client(caller.key, **answers.callbacks()) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await client.call_tool("use_tool", use("dev", "probe", tool))
    assert answered(result) == ASKS[tool][0]
    assert len(answers.asked) == 1


async def test_a_held_call_is_answered_once(module_gateway, caller):
    """A state naming a held call that this process no longer holds (answered already; or
    held by another process) is refused with one text."""
    answers = Answers()
    answer = {"ask": types.ElicitResult(action="accept", content={"name": "Ada"})}
    async with module_gateway.client(caller.key, **answers.callbacks()) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        asked = await client.session.call_tool(
            "use_tool", use("dev", "probe", "ask_form"), allow_input_required=True
        )
        assert isinstance(asked, types.InputRequiredResult), asked
        assert asked.input_requests is not None and list(asked.input_requests) == ["ask"]
        retries = [
            await client.session.call_tool(
                "use_tool",
                use("dev", "probe", "ask_form"),
                input_responses=answer,
                request_state=asked.request_state,
                allow_input_required=True,
            )
            for _ in range(2)
        ]
    assert answered(retries[0]) == FORM
    assert error_of(retries[1]) == (
        "INVALID_PARAMETERS",
        "Error executing tool 'ask_form' in server 'probe' (toolbox 'dev'): the server's "
        "question waits on another process of the gateway, or no longer; call the tool "
        "again without the request state",
    )


@pytest.mark.parametrize("tool", ["ask_form", "ask_roots"])
async def test_with_a_call_in_flight_an_asking_call_gets_a_connection_of_its_own(
    module_gateway, world, tool
):
    """A request from the server names no call: while another call is in flight on the
    pool's connection for the caller's set (another caller that declared the same), a call
    whose client could be asked runs on a connection of its own (`lone_calls`), which
    declares the same set, so the server's question is that call's alone, and is answered."""
    waiting, asking = [await sync_to_async(world.new_key)() for _ in range(2)]
    answers = Answers()
    pool = module_gateway.gateway.pool

    def in_flight() -> int:
        return sum(conn.in_flight for conn in pool.connections())

    with anyio.fail_after(120):
        async with (
            module_gateway.session(waiting.key, **Answers().callbacks()) as other,
            module_gateway.session(asking.key, **answers.callbacks()) as session,
            anyio.create_task_group() as group,
        ):
            payload(await other.call_tool("open_toolbox", {"toolbox": "dev"}))
            payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            group.start_soon(other.call_tool, "use_tool", use("dev", "probe", "wait"))
            await eventually(lambda: in_flight() == 1, 30, "the waiting call to reach the server")
            pooled = len(pool.connections())
            result = await session.call_tool("use_tool", use("dev", "probe", tool))
            assert in_flight() == 1  # the pool's connection still holds the waiting call alone
            assert len(pool.connections()) == pooled  # the asking call's was its own, closed
            group.cancel_scope.cancel()
    assert text_of(result).startswith("answered "), text_of(result)
    assert len(answers.asked) == 1


async def _asked_alone(module_gateway, caller: TenantSetup):
    answers = Answers()
    async with module_gateway.session(caller.key, **answers.callbacks()) as session:
        result = await session.call_tool("use_tool", use("dev", "probe", "ask_form"))
    assert text_of(result)
    return result
