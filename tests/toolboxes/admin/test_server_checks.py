"""Checking a server from the admin (its page, its toolbox's page, a list action, a save)
through the gateway's own connect path, in the background: the page says "checking…",
then the result; the status it leaves in lists, who may check, the bounds of the
background, and the gateway's own connects updating that status."""

from __future__ import annotations

import logging
import queue
import re
import threading
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from tests.accounts.conftest import acme, as_user, globex, people  # noqa: F401
from tests.harness.live import make_tenant_setup, start_gateway
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.results import payload
from tests.harness.waits import eventually
from tests.toolboxes.helpers import make_server
from toolboxes.admin import background_checks
from toolboxes.models import PinState, Server, Tenant, Toolbox

CRASH_ARGS = ["-c", "import sys; print('no config file here', file=sys.stderr); sys.exit(2)"]
EXITED = "the server exited during start-up"
CONNECTED = re.compile(r"Server dev/fixture: connected in \d+ ms, (\d+) tools\.")
CHECKING = re.compile(r"checking… \d+ s")  # the seconds it has been going


def seconds_blurred(text: str) -> str:
    return CHECKING.sub("checking… N s", text)


CHECK_TIMEOUT = 30.0
SECRET_TEXT = "tok-never-logged-1"


@pytest.fixture
def toolbox(transactional_db):
    return Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme"), name="dev", description="d"
    )


@pytest.fixture
def fixture(toolbox):
    return make_server(toolbox, "fixture", [FIXTURE_SERVER])


@pytest.fixture
def broken(toolbox):
    return make_server(toolbox, "broken", CRASH_ARGS, position=1)


@pytest.fixture
def gate(monkeypatch) -> Iterator[threading.Event]:
    """Background checks wait for the test to open the gate (so that "checking…" is seen
    for sure); each server's checks are counted."""
    opened = threading.Event()
    real = background_checks._check
    runs: list[int] = []

    def gated(server_id: int) -> None:
        assert opened.wait(CHECK_TIMEOUT), "the test never opened the gate"
        runs.append(server_id)
        real(server_id)

    monkeypatch.setattr(background_checks, "_check", gated)
    opened.runs = runs  # type: ignore[attr-defined]
    yield opened
    opened.set()
    assert background_checks.wait_idle(CHECK_TIMEOUT)


def check_url(server: Server) -> str:
    return reverse("admin:toolboxes_server_check", args=[server.pk])


def status_url(server: Server) -> str:
    return reverse("admin:toolboxes_server_status", args=[server.pk])


def span(server: Server, state: str, text: str, target: bool = False) -> str:
    result = ' data-result-target="check-result"' if target else ""
    return (
        f'<span class="wb-status wb-{state}" data-status-url="{status_url(server)}" '
        f'data-deadline="60"{result}>{text}</span>'
    )


def ended() -> None:
    assert background_checks.wait_idle(CHECK_TIMEOUT), "a background check never ended"


def test_check_starts_in_the_background_then_shows_the_tools(admin_client, fixture, gate):
    before = admin_client.get(check_url(fixture)).content.decode()
    assert f"Last check: {span(fixture, 'unknown', 'not checked yet', True)}" in before
    assert 'value="Check now"' in before

    response = admin_client.post(check_url(fixture))
    assert (response.status_code, response["Location"]) == (302, check_url(fixture))
    checking = seconds_blurred(admin_client.get(check_url(fixture)).content.decode())
    assert f"Last check: {span(fixture, 'checking', 'checking… N s', True)}" in checking
    assert "toolboxes/server_status.js" in checking
    asked = admin_client.get(status_url(fixture) + "?result=1")
    assert "no-store" in asked["Cache-Control"]
    answer = {**asked.json(), "text": seconds_blurred(asked.json()["text"])}
    assert answer == {"checking": True, "state": "checking", "text": "checking… N s"}
    admin_client.post(check_url(fixture))  # pressed again while it runs: still one check

    gate.set()
    ended()
    assert gate.runs == [fixture.pk]  # type: ignore[attr-defined]
    fixture.refresh_from_db()
    names = [tool["name"] for tool in fixture.last_check_tools]
    assert fixture.last_check_ok is True and "echo" in names
    assert PinState.objects.get(server=fixture).trusted_fingerprint  # trust-first: the offer
    done = admin_client.get(status_url(fixture) + "?result=1").json()
    status = f"ok: {len(names)} tools in {fixture.last_check_ms} ms, 0 minutes ago"
    assert (done["checking"], done["state"], done["text"]) == (False, "ok", status)
    found = CONNECTED.search(done["result_html"])
    assert found and int(found.group(1)) == len(names)
    assert "<code>echo</code>" in done["result_html"]
    html = admin_client.get(check_url(fixture)).content.decode()
    assert found.group(0) in html and "Echo the text back" in html
    assert "<details><summary>input schema</summary>" in html and 'value="Check again"' in html
    listing = admin_client.get(reverse("admin:toolboxes_server_changelist")).content.decode()
    assert span(fixture, "ok", status) in listing


def test_a_failing_check_gives_the_reason_and_the_stderr_tail(admin_client, broken):
    admin_client.post(check_url(broken))
    ended()
    html = admin_client.get(check_url(broken)).content.decode()
    broken.refresh_from_db()
    reason, incident = broken.last_check_reason, broken.last_check_incident
    assert broken.last_check_ok is False and reason.startswith(EXITED)
    assert re.fullmatch(r"[0-9a-f]{12}", incident)
    assert f"Server dev/broken: could not connect: {reason}." in html
    assert f'id="check-incident">Incident <code>{incident}</code>' in html
    assert 'id="check-stderr">no config file here' in html
    # The operator's cause: what happened, in the log's words, and the end of stderr.
    assert broken.last_check_cause == (
        "MCPError: Connection closed (at initialize)\nstderr (its last lines): no config file here"
    )
    cause = '<pre class="wb-cause" id="check-cause">MCPError: Connection closed (at initialize)'
    assert cause in html
    listing = admin_client.get(reverse("admin:toolboxes_server_changelist")).content.decode()
    assert f"failing: {reason} (0 minutes ago; incident {incident})" in listing
    page = admin_client.get(reverse("admin:toolboxes_server_change", args=[broken.pk]))
    assert cause in page.content.decode()
    failing = admin_client.get(
        reverse("admin:toolboxes_server_changelist") + "?last_check_ok__exact=0"
    )
    assert "1 server" in failing.content.decode()


def test_the_list_action_checks_each_selected_server(admin_client, fixture, broken, gate):
    response = admin_client.post(
        reverse("admin:toolboxes_server_changelist"),
        {"action": "check_selected", "_selected_action": [fixture.pk, broken.pk]},
        follow=True,
    )
    html = seconds_blurred(response.content.decode())
    assert "Checking 2 servers: each status below shows its result when its check ends." in html
    assert span(fixture, "checking", "checking… N s") in html
    assert span(broken, "checking", "checking… N s") in html
    threads = [t for t in threading.enumerate() if t.name.startswith("server-check-")]
    assert 0 < len(threads) <= background_checks.CHECK_THREADS  # bounded, whatever the queue
    gate.set()
    ended()
    listing = admin_client.get(reverse("admin:toolboxes_server_changelist")).content.decode()
    broken.refresh_from_db()
    incident = broken.last_check_incident
    failing = f"failing: {broken.last_check_reason} (0 minutes ago; incident {incident})"
    assert failing in listing
    assert re.search(r"ok: \d+ tools in \d+ ms, 0 minutes ago", listing)


def test_saving_a_server_checks_it(admin_client, fixture, gate):
    """A save starts a check (the list after it says "checking…"); saved again while it
    runs, another check follows it (the first read the old configuration)."""
    change = reverse("admin:toolboxes_server_change", args=[fixture.pk])
    form = {
        "toolbox": fixture.toolbox_id,
        "name": "fixture",
        "position": "0",
        "transport": "stdio",
        "enabled": "on",
        "command": fixture.command,
        "cwd": "",
        "args": f"{FIXTURE_SERVER}\n",
        "env__rows": "1",
        "url": "",
        "headers__rows": "1",
        "tool_filters__present": "1",
        "tool_filters": ["*"],
        "mounts": "[]",
        "network": "on",
    }
    saved = admin_client.post(change, {**form, "timeout": "61"}, follow=True)
    assert span(fixture, "checking", "checking… N s") in seconds_blurred(saved.content.decode())
    admin_client.post(change, {**form, "timeout": "62"})
    gate.set()
    ended()
    assert gate.runs == [fixture.pk, fixture.pk]  # type: ignore[attr-defined]
    fixture.refresh_from_db()
    assert fixture.last_check_ok is True


def test_a_full_queue_is_said(admin_client, fixture, monkeypatch):
    class Full(queue.Queue):
        def put_nowait(self, item: int) -> None:
            raise queue.Full

    monkeypatch.setattr(background_checks, "_waiting", Full())
    response = admin_client.post(check_url(fixture), follow=True)
    assert "Too many checks are waiting: check dev/fixture again in a minute." in (
        response.content.decode()
    )
    assert background_checks.checking_since([fixture.pk]) == {}


def test_a_check_that_fails_to_run_is_logged_without_its_text(
    admin_client, fixture, monkeypatch, caplog
):
    def explode(servers):
        raise RuntimeError(f"token {SECRET_TEXT} in a configuration")

    monkeypatch.setattr(background_checks, "check_servers", explode)
    with caplog.at_level(logging.ERROR, logger="toolboxes.admin.background_checks"):
        admin_client.post(check_url(fixture))
        ended()
    assert [r.getMessage() for r in caplog.records] == [
        f"The check of server {fixture.pk} failed: RuntimeError"
    ]
    assert SECRET_TEXT not in caplog.text
    seen = admin_client.get(status_url(fixture)).json()  # not "checking" for ever
    assert seen == {"checking": False, "state": "unknown", "text": "not checked yet"}


def test_the_server_and_toolbox_pages_have_a_check_button(admin_client, fixture):
    button = f'formaction="{check_url(fixture)}" formmethod="post"'
    server_page = admin_client.get(reverse("admin:toolboxes_server_change", args=[fixture.pk]))
    toolbox_page = admin_client.get(
        reverse("admin:toolboxes_toolbox_change", args=[fixture.toolbox_id])
    )
    for html in (server_page.content.decode(), toolbox_page.content.decode()):
        assert button in html and "toolboxes/server_status.js" in html


def test_who_may_check(as_user, acme, globex):  # noqa: F811
    """Another tenant's server is 404 (its page, a check, its status); a viewer may not
    check (403) and sees no button, but follows the status (without the check's result);
    the tenant's admin may."""
    url = check_url(acme.server)
    assert as_user("globex_admin").get(url).status_code == 404
    assert as_user("globex_admin").post(url).status_code == 404
    assert as_user("globex_admin").get(status_url(acme.server)).status_code == 404
    assert as_user("acme_viewer").get(url).status_code == 403
    assert as_user("acme_viewer").post(url).status_code == 403
    viewer_page = as_user("acme_viewer").get(
        reverse("admin:toolboxes_server_change", args=[acme.server.pk])
    )
    assert url not in viewer_page.content.decode()
    assert "not checked yet" in viewer_page.content.decode()
    seen = as_user("acme_viewer").get(status_url(acme.server) + "?result=1").json()
    assert seen == {"checking": False, "state": "unknown", "text": "not checked yet"}
    assert as_user("acme_admin").get(url).status_code == 200
    assert "result_html" in as_user("acme_admin").get(status_url(acme.server) + "?result=1").json()


def test_a_member_checks_only_own_servers_from_the_list(as_user, acme, globex, monkeypatch):  # noqa: F811
    started: list[int] = []

    def record(server_ids, changed=False):
        started.extend(server_ids)
        return list(started), []

    monkeypatch.setattr(background_checks, "start", record)
    as_user("mixed").post(
        reverse("admin:toolboxes_server_changelist"),
        {"action": "check_selected", "_selected_action": [acme.server.pk, globex.server.pk]},
    )
    assert started == [acme.server.pk]  # globex: only viewed by this user


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
    # The admin's side of the same failure: its incident and its cause, recorded too.
    broken = await Server.objects.aget(name="broken")
    assert re.fullmatch(r"[0-9a-f]{12}", broken.last_check_incident)
    assert broken.last_check_cause.endswith("\nstderr (its last lines): no config file here")
    fixture = await Server.objects.aget(name="fixture")
    assert (fixture.last_check_incident, fixture.last_check_cause) == ("", "")
