"""A server whose tools work but whose resources or prompts cannot be listed (what its
toolbox's own endpoint would serve): the admin's check says so on the server's status, ok
still, one note per list with the server's own error; `check_config` says it too; a
gateway's connect, which does not look at those lists, keeps the notes; a server whose
lists all work has none."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.urls import reverse
from django.utils.html import escape

from mcp_gateway import check_servers
from tests.harness.live import make_tenant_setup, start_gateway
from tests.harness.paths import FIXTURE_SERVER, UNLISTED_SERVER
from tests.harness.results import payload
from tests.harness.waits import eventually
from tests.toolboxes.helpers import make_server
from toolboxes import server_status
from toolboxes.models import Server, Tenant, Toolbox

NOTES = (
    "resources/list failed (the server's error -32603: the resource index is gone); "
    "prompts/list failed (the server's error -32603: prompts are not ready)"
)
OK = re.compile(r"ok: 1 tool in \d+ ms, 0 minutes ago")


@pytest.fixture
def toolbox(transactional_db) -> Toolbox:
    return Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme"), name="dev", description="d"
    )


@pytest.fixture
def unlisted(toolbox) -> Server:
    return make_server(toolbox, "unlisted", [UNLISTED_SERVER])


def test_the_check_notes_each_list_that_failed(admin_client, unlisted):
    [result] = check_servers([unlisted])
    assert result.ok and [tool["name"] for tool in result.tools] == ["echo"]
    assert "; ".join(result.notes) == NOTES
    unlisted.refresh_from_db()
    assert (unlisted.last_check_ok, unlisted.last_check_reason) == (True, NOTES)
    status = server_status.status_text(unlisted)
    assert OK.fullmatch(status.removesuffix(f"; {NOTES}")) and status.endswith(f"; {NOTES}")
    listing = admin_client.get(reverse("admin:toolboxes_server_changelist")).content.decode()
    assert escape(status) in listing


def test_check_config_says_it_too(unlisted):
    out = StringIO()
    call_command("check_config", stdout=out)
    [row] = [line for line in out.getvalue().splitlines() if "unlisted" in line]
    assert re.split(r"\s{2,}", row) == ["acme", "dev", "unlisted", "ok", "1", NOTES]


def test_a_server_whose_lists_work_has_no_notes(toolbox):
    fixture = make_server(toolbox, "fixture", [FIXTURE_SERVER])
    [result] = check_servers([fixture])
    assert result.ok and result.notes == ()
    fixture.refresh_from_db()
    assert fixture.last_check_reason == ""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def checked_then_served(transactional_db):
    setup = make_tenant_setup()
    server = make_server(setup.toolbox("dev"), "unlisted", [UNLISTED_SERVER])
    check_servers([server])
    server.refresh_from_db()
    checked_at = server.last_check_at
    running = start_gateway()
    try:
        yield setup, running.live, checked_at
    finally:
        running.stop()


@pytest.mark.anyio
async def test_a_gateways_connect_keeps_the_checks_notes(checked_then_served):
    setup, live, checked_at = checked_then_served
    async with live.session(setup.key) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert opened["servers_connected"] == 1

    async def recorded() -> bool:
        server = await Server.objects.aget(name="unlisted")
        return server.last_check_at != checked_at

    await eventually(recorded, 30, "the gateway's connect to be recorded")
    server = await Server.objects.aget(name="unlisted")
    assert (server.last_check_ok, server.last_check_reason) == (True, NOTES)
    assert (await sync_to_async(server_status.status_text)(server)).endswith(f"; {NOTES}")
