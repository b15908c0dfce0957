"""The server sees the calling client's declared capabilities, never more (the contract,
"What passes through besides the result").

A server spoken to in 2025-11-25 (a remote server; a stdio server on the SDK 1.x) learns
them once, at `initialize`: the pool's base connection of a server declares none, and a
caller that declared some is served by the pool's connection for its set. A 2026-07-28
server is told each call's set in the request, on one connection for all callers. Each
server here reports what its client declared (its `declared` tool)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.client.session import ClientSession

from mcp_gateway.downstream.connection import Connection
from tests.e2e.test_relay_input import Answers
from tests.harness.live import LiveGateway, TenantSetup, add_relay_probe, make_tenant_setup
from tests.harness.paths import SERVERS
from tests.harness.results import payload, text_of, use
from tests.harness.servers import server_process
from tests.harness.waits import eventually
from toolboxes.models import Server

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("relay_declared")]

OLD_PYTHON = str(Path(settings.BASE_DIR) / "tests" / ".mcp1-venv" / "bin" / "python")
OLD_PROBE = str(SERVERS / "old_probe.py")
# What the SDK's client declares for an elicitation callback alone, and for all three.
ELICITATION = {"elicitation": {"form": {}, "url": {}}}
ALL_THREE = {**ELICITATION, "sampling": {}, "roots": {"listChanged": True}}
# The servers spoken to in 2025-11-25: remote (Streamable HTTP) and stdio (the SDK 1.x).
OLD_SERVERS = ["probe", "old"]


@pytest.fixture(scope="module")
def world(module_db) -> Iterator[TenantSetup]:
    """`probe`: tests/servers/relay_probe.py as a remote server; `old`: old_probe.py on the
    SDK 1.x over stdio; `modern`: relay_probe.py over stdio (spoken to in 2026-07-28);
    `changing`: another remote relay probe, whose tools a test changes."""
    with (
        server_process("relay_probe.py") as port,
        server_process("relay_probe.py") as changing_port,
    ):
        setup = make_tenant_setup("declared")
        toolbox = setup.toolbox("dev")
        for name, at in (("probe", port), ("changing", changing_port)):
            Server.objects.create(
                toolbox=toolbox,
                name=name,
                transport="streamable-http",
                url=f"http://127.0.0.1:{at}/mcp",
                pinning="off",
            )
        Server.objects.create(
            toolbox=toolbox, name="old", command=OLD_PYTHON, args=[OLD_PROBE], pinning="off"
        )
        add_relay_probe(toolbox, "modern", pinning="off")
        yield setup


@pytest.fixture
def caller(world) -> TenantSetup:
    return world.new_key()


async def declared(session: Any, server: str) -> dict[str, Any]:
    """What `server` says its client declared, asked through use_tool."""
    result = await session.call_tool("use_tool", use("dev", server, "declared"))
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


async def open_dev(session: ClientSession) -> dict[str, Any]:
    return payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))


def tools_of(opened: dict[str, Any]) -> list[tuple[str, str]]:
    return [(tool["server"], tool["name"]) for tool in opened["tools"]]


def connections(gateway: LiveGateway, server: str) -> list[Connection]:
    return [conn for conn in gateway.gateway.pool.connections() if conn.ref.server == server]


@pytest.mark.parametrize("server", [*OLD_SERVERS, "modern"])
async def test_a_2025_client_that_declared_nothing_is_told_of_none(module_gateway, caller, server):
    async with module_gateway.session(caller.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        assert await declared(session, server) == {}


@pytest.mark.parametrize("server", [*OLD_SERVERS, "modern"])
async def test_a_2026_client_that_declared_nothing_is_told_of_none(module_gateway, caller, server):
    async with module_gateway.client(caller.key) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        assert await declared(client, server) == {}


@pytest.mark.parametrize("server", [*OLD_SERVERS, "modern"])
async def test_a_client_that_declared_elicitation_is_told_of_it_alone(
    module_gateway, caller, server
):
    answers = Answers()
    async with module_gateway.session(caller.key, elicitation_callback=answers.elicit) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        assert await declared(session, server) == ELICITATION
    async with module_gateway.client(caller.key, elicitation_callback=answers.elicit) as client:
        assert await declared(client, server) == ELICITATION


@pytest.mark.parametrize("server", OLD_SERVERS)
async def test_a_capabilitys_sub_fields_are_declared_as_the_client_declared_them(
    module_gateway, caller, server
):
    sampling = types.SamplingCapability(tools=types.SamplingToolsCapability())
    answers = Answers()
    async with module_gateway.session(
        caller.key, sampling_callback=answers.sample, sampling_capabilities=sampling
    ) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        assert await declared(session, server) == {"sampling": {"tools": {}}}


@pytest.mark.parametrize("server", OLD_SERVERS)
async def test_callers_that_declared_differently_alternate_on_one_tenant(
    module_gateway, world, server
):
    """One tenant's callers, the one declaring nothing and the other elicitation, calling
    in turn: each is told of its own; the server runs one connection for each set."""
    quiet, asking = [await sync_to_async(world.new_key)() for _ in range(2)]
    answers = Answers()
    async with (
        module_gateway.session(quiet.key) as nothing,
        module_gateway.session(asking.key, elicitation_callback=answers.elicit) as elicits,
    ):
        payload(await nothing.call_tool("open_toolbox", {"toolbox": "dev"}))
        payload(await elicits.call_tool("open_toolbox", {"toolbox": "dev"}))
        told = [await declared(session, server) for session in (nothing, elicits, nothing, elicits)]
    assert told == [{}, ELICITATION, {}, ELICITATION]
    sets = [conn.declares for conn in connections(module_gateway, server)]
    assert {} in sets and ELICITATION in sets
    assert len(sets) == len({json.dumps(each, sort_keys=True) for each in sets})  # one a set


async def test_a_2026_server_keeps_one_connection_for_every_set(module_gateway, caller):
    answers = Answers()
    async with (
        module_gateway.session(caller.key) as nothing,
        module_gateway.session(caller.key, **answers.callbacks()) as everything,
    ):
        payload(await nothing.call_tool("open_toolbox", {"toolbox": "dev"}))
        told = [await declared(session, "modern") for session in (nothing, everything)]
    assert told == [{}, ALL_THREE]
    [conn] = connections(module_gateway, "modern")
    assert conn.modern and conn.declares == {}


async def test_a_change_heard_on_a_sets_connection_is_listed_on_the_base(module_gateway, caller):
    """The server announces a change to the session it was made on (a caller's set's
    connection, whose tools that caller is listed): its other connections list again too,
    the base among them, whose tools a client that declared nothing is listed. The server
    is remote: its announcement comes on the session's standalone stream, in no order with
    the call's answer, so each open shows it within a bounded wait (the base never would
    without the sibling's listing: the server tells only the session that changed)."""
    answers = Answers()
    async with (
        module_gateway.session(caller.key, elicitation_callback=answers.elicit) as asking,
        module_gateway.session(caller.key) as plain,
    ):
        before = [await open_dev(session) for session in (asking, plain)]
        added = await asking.call_tool("use_tool", use("dev", "changing", "add_tool"))
        for session in (asking, plain):

            async def listed(session: ClientSession = session) -> bool:
                return ("changing", "added") in tools_of(await open_dev(session))

            await eventually(listed, 20, "the added tool to be listed")
    assert text_of(added) == "added"
    assert all(("changing", "added") not in tools_of(each) for each in before)
    sets = [conn.declares for conn in connections(module_gateway, "changing")]
    assert {} in sets and ELICITATION in sets  # (other tests' opens made other sets')
