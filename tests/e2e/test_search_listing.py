"""search_tools' knowledge of a tenant's tools: a server never listed is listed during the
search (a failure is an `_errors` line, the others answer; the live-connection limit never
hides a tool), a stored listing answers without connecting, a change (an edit, a removal,
a connection's new tool list, an approval) is seen by the next search; a grant limited to a toolbox
finds nothing elsewhere; searches reach the call log and the metrics."""

from __future__ import annotations

import sys
from datetime import timedelta

import mcp_types as types
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.utils import timezone

from accounts.models import Membership
from calls.models import CallRecord, PayloadCapture
from kernel.pins import definition, digests
from mcp_gateway.observe import metrics
from tests.harness.live import LiveGateway, TenantSetup
from tests.harness.paths import SERVERS
from tests.harness.results import payload, text_of
from tests.harness.waits import eventually
from toolboxes import pins
from toolboxes.models import Server, Toolbox, ToolPin

pytestmark = pytest.mark.anyio

DESCRIBED = str(SERVERS / "described_server.py")
PAGE = "page_oncall=Page the on-call engineer about an incident"
SECRET = "search-secret-7f3a9c1e5b"


def described(toolbox: Toolbox, name: str, *tools: str, position: int = 0, **fields) -> Server:
    server = Server(
        toolbox=toolbox,
        name=name,
        position=position,
        command=sys.executable,
        args=[DESCRIBED, *tools],
        **fields,
    )
    server.full_clean()
    server.save()
    return server


async def search(live_gateway: LiveGateway, key: str, **arguments) -> dict:
    async with live_gateway.session(key) as session:
        return payload(await session.call_tool("search_tools", arguments))


def names(data: dict) -> list[str]:
    return [tool["name"] for tool in data["tools"]]


@pytest.fixture
def failing(make_setup) -> TenantSetup:
    setup = make_setup()
    dev = setup.toolbox("dev")
    described(dev, "pager", PAGE)
    setup.fixture_server(dev, "database", "--exit-at-start", position=1)
    return setup


async def test_a_server_that_fails_to_list_is_an_errors_line(live_gateway, failing):
    data = await search(live_gateway, failing.key, query="page the on-call engineer")
    assert names(data) == ["page_oncall"]
    assert data["_errors"] == [
        "Failed to connect to server 'database' in toolbox 'dev': "
        "the server exited during start-up (exit code 2)"
    ]
    assert set(data["_incidents"]) == {"dev/database"}


@pytest.fixture
def stored(make_setup) -> TenantSetup:
    """A server whose command does not exist, with a successful listing stored (as another
    replica or an admin's check leaves it)."""
    setup = make_setup()
    server = described(setup.toolbox("dev"), "archive")
    server.command = "no-such-command-workbench"
    server.save()
    tool = types.Tool(
        name="archive_invoices", description="Archive old invoices", input_schema={"type": "object"}
    )
    Server.objects.filter(pk=server.pk).update(
        last_check_ok=True, last_check_at=timezone.now(), last_check_tools=[definition(tool)]
    )
    setup.server = server
    return setup


async def test_a_stored_listing_answers_until_the_server_is_edited(live_gateway, stored):
    data = await search(live_gateway, stored.key, query="archive old invoices")
    assert names(data) == ["archive_invoices"] and "_errors" not in data  # nothing connected

    @sync_to_async
    def edit() -> None:  # an edit may change what it offers: the listing is not trusted
        stored.server.refresh_from_db()
        stored.server.timeout = 30
        stored.server.save()

    await edit()
    again = await search(live_gateway, stored.key, query="archive old invoices")
    assert names(again) == []
    assert again["_errors"] == [
        "Failed to connect to server 'archive' in toolbox 'dev': the command was not found"
    ]


@pytest.fixture
def crowded(make_setup) -> TenantSetup:
    """A tenant allowed one live connection, with three servers never listed."""
    setup = make_setup()
    setup.tenant.max_connections = 1
    setup.tenant.save()
    for name in ("alpha", "beta", "gamma"):
        described(setup.toolbox(name), name, f"{name}_report=Write the {name} quarterly report")
    return setup


async def test_the_live_connection_limit_never_hides_a_tool(live_gateway, crowded):
    query = "write the alpha beta gamma quarterly report"
    data = await search(live_gateway, crowded.key, query=query)
    assert sorted(names(data)) == ["alpha_report", "beta_report", "gamma_report"]
    assert "_errors" not in data
    live = [conn for conn in live_gateway.gateway.pool.connections() if conn.ref.tenant == "acme"]
    [conn] = live  # the others were listed on connections of their own, closed since
    # The found tool on that connection is callable at once (its toolbox opened by the search).
    name = conn.ref.server
    async with live_gateway.session(crowded.key) as session:
        called = await session.call_tool(
            "use_tool", {"tool": {"toolbox": name, "server": name, "name": f"{name}_report"}}
        )
    assert text_of(called) == f"{name}_report: {{}}"


@pytest.fixture
def two_servers(make_setup) -> TenantSetup:
    setup = make_setup()
    ops = setup.toolbox("ops")
    setup.pager = described(ops, "pager", PAGE)
    setup.deploy = described(ops, "deploy", "restart_service=Restart a service", position=1)
    return setup


async def test_a_removed_tool_or_server_is_gone_at_once(live_gateway, two_servers):
    query = "page on-call engineer or restart a service"
    data = await search(live_gateway, two_servers.key, query=query)
    assert sorted(names(data)) == ["page_oncall", "restart_service"]

    @sync_to_async
    def filter_out() -> None:
        two_servers.pager.tool_filters = []
        two_servers.pager.save()

    await filter_out()
    assert names(await search(live_gateway, two_servers.key, query=query)) == ["restart_service"]
    await sync_to_async(two_servers.deploy.delete)()
    assert names(await search(live_gateway, two_servers.key, query=query)) == []


@pytest.fixture
def unpinned(make_setup) -> TenantSetup:
    setup = make_setup()
    described(setup.toolbox("ops"), "pager", PAGE, pinning="off")
    return setup


async def test_a_connections_new_tool_list_is_found_by_the_next_search(live_gateway, unpinned):
    """As the gateway's re-listing on `notifications/tools/list_changed` replaces it."""
    async with live_gateway.session(unpinned.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "ops"}))
    query = "silence the alerts"
    assert names(await search(live_gateway, unpinned.key, query=query)) == []
    [conn] = [c for c in live_gateway.gateway.pool.connections() if c.ref.server == "pager"]
    added = types.Tool(
        name="silence_alerts", description="Silence the alerts", input_schema={"type": "object"}
    )

    async def relist() -> None:
        tools = [*conn.tools, added]
        conn.tools, conn.digests = tools, digests(tools)

    live_gateway.run_on_loop(relist())
    assert names(await search(live_gateway, unpinned.key, query=query)) == ["silence_alerts"]

    async def drop() -> None:
        tools = [tool for tool in conn.tools if tool.name != "silence_alerts"]
        conn.tools, conn.digests = tools, digests(tools)

    live_gateway.run_on_loop(drop())
    assert names(await search(live_gateway, unpinned.key, query=query)) == []


@pytest.fixture
def signed_in(make_setup, settings) -> tuple[TenantSetup, str]:
    """An OAuth sign-in of a member to acme limited to the toolbox `dev` (its access token),
    as tests/e2e/test_oauth.py makes one without the browser dance."""
    from django.test import Client
    from oauth2_provider.models import AccessToken

    from tests.accounts.oauth_client import SignIn

    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    setup = make_setup()
    dev = setup.toolbox("dev")
    described(dev, "pager", PAGE)
    described(setup.toolbox("weather"), "forecast", "get_forecast=Get the weather forecast")
    user = User.objects.create_user("ada", password="pw-ada-search-1234", is_staff=True)
    Membership.objects.create(user=user, tenant=setup.tenant, role="admin")
    flow = SignIn(Client())
    flow.client.force_login(user)
    flow.register()
    tokens = flow.tokens(setup.tenant.pk, [dev.pk])
    AccessToken.objects.filter(scope="mcp").update(expires=timezone.now() + timedelta(hours=1))
    return setup, tokens["access_token"]


async def test_a_grant_limited_to_a_toolbox_finds_nothing_elsewhere(live_gateway, signed_in):
    setup, token = signed_in
    # The tenant's key finds the forecast: it is there to be found.
    assert names(await search(live_gateway, setup.key, query="weather forecast")) == [
        "get_forecast"
    ]
    assert names(await search(live_gateway, token, query="weather forecast")) == []
    assert names(await search(live_gateway, token, query="page the on-call")) == ["page_oncall"]


@pytest.fixture
def captured(make_setup) -> TenantSetup:
    setup = make_setup("searchlog")
    PayloadCapture.objects.create(tenant=setup.tenant)
    described(setup.toolbox("ops"), "pager", PAGE, env={"API_TOKEN": SECRET})
    return setup


async def test_searches_are_in_the_call_log_and_the_metrics(live_gateway, captured):
    m = metrics.metrics()
    ok, empty = m.searches.labels("searchlog", "ok"), m.search_empty.labels("searchlog")
    ok_before, empty_before = ok._value.get(), empty._value.get()
    found = await search(live_gateway, captured.key, query=f"page on-call {SECRET}")
    assert names(found) == ["page_oncall"]
    assert names(await search(live_gateway, captured.key, query="zzxqv", toolbox="ops")) == []
    assert (ok._value.get() - ok_before, empty._value.get() - empty_before) == (2, 1)

    def rows() -> list[CallRecord]:
        return list(
            CallRecord.objects.filter(tenant=captured.tenant, meta_tool="search_tools").order_by(
                "at"
            )
        )

    await eventually(lambda: sync_to_async(lambda: len(rows()) == 2)(), 15, "2 search rows")
    first, second = await sync_to_async(rows)()
    assert (first.outcome, first.toolbox, second.toolbox) == ("ok", "", "ops")
    assert first.arguments == '{"query": "page on-call [redacted]"}'
    assert SECRET not in first.arguments + first.result
    assert second.arguments == '{"query": "zzxqv", "toolbox": "ops"}'


@pytest.fixture
def pinned(make_setup) -> TenantSetup:
    setup = make_setup()
    setup.vault = described(
        setup.toolbox("files"),
        "vault",
        "shred_file=Shred a file so that nobody can ever read it",
        pinning="approve-all",  # every tool waits for an admin
    )
    return setup


async def test_a_held_tool_is_found_once_an_admin_approves_it(live_gateway, pinned):
    query = "shred a file"
    assert names(await search(live_gateway, pinned.key, query=query)) == []

    @sync_to_async
    def approve() -> int:  # the offer is recorded by the connect, off the request path
        return pins.approve(ToolPin.objects.filter(server=pinned.vault))

    await eventually(lambda: approve(), 15, "the offer to be recorded and approved")
    assert names(await search(live_gateway, pinned.key, query=query)) == ["shred_file"]
