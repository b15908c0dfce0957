"""Checking a server from the admin (its page, its toolbox's page, a list action) through
the gateway's own connect path, the status it leaves in lists, who may check, and the
gateway's own connects updating that status."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from mcp_gateway import CheckResult
from tests.accounts.conftest import acme, as_user, globex, people  # noqa: F401
from tests.harness.live import make_tenant_setup, start_gateway
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.results import payload
from tests.harness.waits import eventually
from tests.toolboxes.helpers import make_server
from toolboxes.models import PinState, Server, Tenant, Toolbox

CRASH_ARGS = ["-c", "import sys; print('no config file here', file=sys.stderr); sys.exit(2)"]
EXITED = "the server exited during start-up"
CONNECTED = re.compile(r"Server dev/fixture: connected in \d+ ms, (\d+) tools\.")


@pytest.fixture
def toolbox(db):
    return Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme"), name="dev", description="d"
    )


@pytest.fixture
def fixture(toolbox):
    return make_server(toolbox, "fixture", [FIXTURE_SERVER])


@pytest.fixture
def broken(toolbox):
    return make_server(toolbox, "broken", CRASH_ARGS, position=1)


def check_url(server: Server) -> str:
    return reverse("admin:toolboxes_server_check", args=[server.pk])


def test_check_lists_the_tools_and_records_the_status(admin_client, fixture):
    before = admin_client.get(check_url(fixture)).content.decode()
    assert 'Last check: <span class="wb-status wb-unknown">not checked yet</span>' in before
    assert 'value="Check now"' in before

    html = admin_client.post(check_url(fixture)).content.decode()
    found = CONNECTED.search(html)
    assert found, html[:3000]
    assert "<code>echo</code>" in html and "Echo the text back" in html
    assert "<details><summary>input schema</summary>" in html
    fixture.refresh_from_db()
    names = [tool["name"] for tool in fixture.last_check_tools]
    assert int(found.group(1)) == len(names) and "echo" in names
    assert fixture.last_check_ok is True and fixture.last_check_ms is not None
    assert PinState.objects.get(server=fixture).trusted_fingerprint  # trust-first: the offer
    listing = admin_client.get(reverse("admin:toolboxes_server_changelist")).content.decode()
    assert f"ok: {len(names)} tools in {fixture.last_check_ms} ms, 0 minutes ago" in listing


def test_a_failing_check_gives_the_reason_and_the_stderr_tail(admin_client, broken):
    html = admin_client.post(check_url(broken)).content.decode()
    broken.refresh_from_db()
    reason = broken.last_check_reason
    assert broken.last_check_ok is False and reason.startswith(EXITED)
    assert f"Server dev/broken: could not connect: {reason}." in html
    assert 'id="check-stderr">no config file here' in html
    listing = admin_client.get(reverse("admin:toolboxes_server_changelist")).content.decode()
    assert f"failing: {reason} (0 minutes ago)" in listing
    failing = admin_client.get(
        reverse("admin:toolboxes_server_changelist") + "?last_check_ok__exact=0"
    )
    assert "1 server" in failing.content.decode()


def test_the_list_action_checks_each_selected_server(admin_client, fixture, broken):
    response = admin_client.post(
        reverse("admin:toolboxes_server_changelist"),
        {"action": "check_selected", "_selected_action": [fixture.pk, broken.pk]},
        follow=True,
    )
    html = response.content.decode()
    assert CONNECTED.search(html)
    broken.refresh_from_db()
    assert f"Server dev/broken: could not connect: {broken.last_check_reason}." in html


def test_the_server_and_toolbox_pages_have_a_check_button(admin_client, fixture):
    button = f'formaction="{check_url(fixture)}" formmethod="post"'
    server_page = admin_client.get(reverse("admin:toolboxes_server_change", args=[fixture.pk]))
    toolbox_page = admin_client.get(
        reverse("admin:toolboxes_toolbox_change", args=[fixture.toolbox_id])
    )
    assert button in server_page.content.decode()
    assert button in toolbox_page.content.decode()


def test_who_may_check(as_user, acme, globex):  # noqa: F811
    """Another tenant's server is 404 (GET and POST); a viewer may not check (403) and sees
    no button; the tenant's admin may."""
    url = check_url(acme.server)
    assert as_user("globex_admin").get(url).status_code == 404
    assert as_user("globex_admin").post(url).status_code == 404
    assert as_user("acme_viewer").get(url).status_code == 403
    assert as_user("acme_viewer").post(url).status_code == 403
    viewer_page = as_user("acme_viewer").get(
        reverse("admin:toolboxes_server_change", args=[acme.server.pk])
    )
    assert url not in viewer_page.content.decode()
    assert "not checked yet" in viewer_page.content.decode()
    assert as_user("acme_admin").get(url).status_code == 200


def test_a_member_checks_only_own_servers_from_the_list(as_user, acme, globex, monkeypatch):  # noqa: F811
    checked: list[str] = []

    def record(servers):
        checked.extend(server.name for server in servers)
        return [CheckResult(True, 1)] * len(servers)

    monkeypatch.setattr("toolboxes.admin.server_checks.check_servers", record)
    as_user("mixed").post(
        reverse("admin:toolboxes_server_changelist"),
        {"action": "check_selected", "_selected_action": [acme.server.pk, globex.server.pk]},
    )
    assert checked == ["acme-time"]  # globex: only viewed by this user


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def gateway_with_a_broken_server(transactional_db):
    setup = make_tenant_setup()
    toolbox = setup.toolbox("dev")
    make_server(toolbox, "fixture", [FIXTURE_SERVER])
    make_server(toolbox, "broken", CRASH_ARGS, position=1)
    running = start_gateway()
    try:
        yield setup, running.live
    finally:
        running.stop()


def statuses() -> dict[str, tuple[bool | None, str]]:
    return {s.name: (s.last_check_ok, s.last_check_reason) for s in Server.objects.all()}


@pytest.mark.anyio
async def test_the_gateways_own_connects_update_the_status(gateway_with_a_broken_server):
    setup, live = gateway_with_a_broken_server
    async with live.session(setup.key) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert opened["servers_connected"] == 1

    async def recorded() -> bool:
        return None not in [ok for ok, _ in (await sync_to_async(statuses)()).values()]

    await eventually(recorded, 10, "both connects to be recorded")
    found = await sync_to_async(statuses)()
    assert found["fixture"] == (True, "")
    assert found["broken"][0] is False and found["broken"][1].startswith(EXITED)
    assert opened["_errors"] == [
        f"Failed to connect to server 'broken' in toolbox 'dev': {found['broken'][1]}"
    ]
