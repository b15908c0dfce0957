"""In a real browser, where an admin looks after a gateway in use (issue 37): the home page
as a dashboard (alerts for a failing server and held tools, live connections, today's
calls, recent failures with their incident ids), usage per tool and per key with a chart
that has axes, held badges in the lists and held tools first, the call log's list at
1400 px (every column shown, times to the second, successful opens folded away), and the
OAuth consent page as a plain page of its own. A screenshot of each."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError
from django.test import Client
from django.utils import timezone

from accounts.models import Membership
from calls.models import CallRecord
from tests.accounts.oauth_client import SignIn
from tests.browser.test_tenant_admin_flow import login
from tests.harness.live import make_tenant_setup
from tests.harness.results import payload, use
from tests.harness.waits import wait_until
from toolboxes.models import Server, ToolPin

pytestmark = pytest.mark.once  # the admin in Chromium: one pass (see test_tenant_admin_flow)

PASSWORD = "pw-operator-overview-1"
INCIDENT = re.compile(r"[0-9a-f]{12}")
SECONDS = re.compile(r"([A-Z][a-z]{2} \d\d )?\d\d:\d\d:\d\d")  # to the second
ECHOES = 3


@pytest.fixture
def gateway_in_use(transactional_db, live_gateway, settings):
    """acme's toolbox `dev`: the fixture server (used) and a remote server on loopback (the
    egress policy refuses it: failing); in `ops`, a server whose two tools wait for an
    admin."""
    settings.WORKBENCH_EGRESS_ALLOW = []
    User.objects.create_superuser("olga", password=PASSWORD)
    setup = make_tenant_setup("acme")
    dev = setup.toolbox("dev")
    setup.fixture_server(dev, "fixture")
    Server.objects.create(
        toolbox=dev,
        name="issues",
        position=1,
        transport="streamable-http",
        url="http://127.0.0.1:9/mcp",
    )
    weather = Server.objects.create(  # in a toolbox the client does not open: never run
        toolbox=setup.toolbox("ops"), name="weather", command="uvx", args=["mcp-weather"]
    )
    Server.objects.filter(pk=weather.pk).update(
        last_check_ok=True,
        last_check_at=timezone.now(),
        last_check_ms=640,
        last_check_tools=[{"name": "forecast"}, {"name": "alerts"}],
    )
    for name in ("forecast", "alerts"):
        ToolPin.objects.create(
            server=weather, name=name, offered_hash=name, offered_definition={"name": name}
        )

    async def work() -> str:
        async with live_gateway.session(setup.key) as session:
            opened = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            for number in range(ECHOES):
                echo = use("dev", "fixture", "echo", {"text": f"{number}"})
                await session.call_tool("use_tool", echo)
            await session.call_tool("use_tool", use("dev", "issues", "anything", {}))
        return opened["_errors"][0]

    error = asyncio.run(work())
    assert error == (
        "Failed to connect to server 'issues' in toolbox 'dev': the server could not be reached"
    )

    def logged() -> bool:
        try:
            return CallRecord.objects.filter(tenant=setup.tenant).count() == ECHOES + 2
        except OperationalError:  # shared-cache SQLite: the writer holds the table right now
            return False

    wait_until(logged, 15, "the call log's batches")
    wait_until(
        lambda: Server.objects.get(name="issues").last_check_ok is False,
        15,
        "the failed connect recorded as the server's status",
    )
    return setup


def test_the_dashboard_usage_and_held_badges(
    chromium, live_gateway, gateway_in_use, plain_http_cookies
):
    base = live_gateway.url.removesuffix("/mcp")
    page = chromium.new_page(base)
    issues = Server.objects.get(name="issues")

    def home() -> dict[str, Any]:
        login(page, "olga", PASSWORD)
        page.goto("/admin/")
        return {
            "alerts": page.locator("#wb-alerts li").all_inner_texts(),
            "live": page.inner_text("#wb-card-live"),
            "held": page.inner_text("#wb-card-held"),
            "today": page.inner_text("#wb-card-today"),
            "failures": page.inner_text("#wb-recent-failures"),
            "menu": page.inner_text("#content-main .app-toolboxes"),
            "calls menu": page.inner_text("#content-main .app-calls"),
        }

    seen = chromium.run(home)
    chromium.shot(page, "overview-01-dashboard")
    failing, held = seen["alerts"]
    assert failing.startswith("acme/dev/issues is failing: the server could not be reached (")
    assert failing.endswith(f"incident {issues.last_check_incident}")
    assert held == (
        "2 tool definitions held on acme/ops/weather: clients do not see them until an "
        "admin approves"
    )
    assert "acme/dev/fixture 1" in seen["live"]
    assert "2 held" in seen["held"] and "acme/ops/weather 2" in seen["held"]
    assert f"{ECHOES + 2}\n" in seen["today"] and "1 not ok" in seen["today"]
    assert f"{ECHOES} use_tool" not in seen["today"]  # use_tool: the echoes and the failure
    assert f"{ECHOES + 1} use_tool" in seen["today"] and "1 open_toolbox" in seen["today"]
    [failed] = CallRecord.objects.filter(server="issues")
    assert INCIDENT.fullmatch(failed.incident)
    assert "use_tool dev/issues/anything" in seen["failures"]
    assert failed.incident in seen["failures"]
    assert "Tool definitions (2 held)" in seen["menu"] and "Usage" in seen["calls menu"]

    def usage() -> dict[str, Any]:
        page.click("#wb-usage-link")
        page.wait_for_selector("#usage-chart")
        return {
            "totals": page.inner_text("#usage-totals"),
            "y": page.locator("#usage-y-axis text").all_text_contents(),
            "x": page.locator("#usage-x-axis text").all_text_contents(),
            "keys": page.inner_text("#usage-keys"),
            "tools": page.inner_text("#usage-tools"),
            "meta": page.inner_text("#usage-meta-tools"),
            "chart width": page.locator("#usage-chart").bounding_box()["width"],
        }

    stats = chromium.run(usage)
    chromium.shot(page, "overview-02-usage")
    assert stats["totals"].startswith(f"{ECHOES + 2} calls in the last day, 1 not ok")
    assert stats["y"][0] == "0" and len(stats["y"]) == 3  # 0, half, the top
    assert len(stats["x"]) >= 4 and all(re.fullmatch(r"\d\d:\d\d", x) for x in stats["x"])
    prefix = gateway_in_use.api_key.prefix
    assert f"{prefix} test\t{ECHOES + 2}" in stats["keys"]
    assert f"dev/fixture/echo\t{ECHOES}\t0" in stats["tools"]
    assert "open_toolbox\t1" in stats["meta"] and f"use_tool\t{ECHOES + 1}\t1" in stats["meta"]
    assert stats["chart width"] >= 700

    def lists() -> dict[str, Any]:
        page.goto("/admin/toolboxes/server/")
        servers = page.inner_text("#result_list")
        badge = page.locator("#result_list a.wb-held-badge").inner_text()
        page.goto("/admin/toolboxes/toolbox/")
        toolboxes = page.locator("#result_list a.wb-held-badge").inner_text()
        page.goto("/admin/toolboxes/toolpin/")
        first_rows = page.locator("#result_list tbody tr").all_inner_texts()[:2]
        return {"servers": servers, "badge": badge, "toolboxes": toolboxes, "first": first_rows}

    shown = chromium.run(lists)
    chromium.shot(page, "overview-04-held-first")
    assert "ok: 2 tools, 2 held, in 640 ms, 0 minutes ago 2 held" in shown["servers"]
    assert shown["badge"] == shown["toolboxes"] == "2 held"
    assert all("weather" in row and "held: new" in row for row in shown["first"])

    def server_list_shot() -> None:
        page.goto("/admin/toolboxes/server/")

    chromium.run(server_list_shot)
    chromium.shot(page, "overview-03-held-badge-server-list")

    def failing_server() -> dict[str, str]:
        page.goto(f"/admin/toolboxes/server/{issues.pk}/change/")
        return {
            "status": page.inner_text(".field-check_status"),
            "cause": page.inner_text("#check-cause"),
        }

    failing_page = chromium.run(failing_server)
    chromium.shot(page, "overview-07-failing-server-cause")
    # Recorded by the gateway's own connect (open_toolbox), not an admin's check.
    assert f"incident {issues.last_check_incident}" in failing_page["status"]
    assert failing_page["cause"].startswith(
        "egress refused: 127.0.0.1 resolves to 127.0.0.1 (loopback) (while starting)\n"
    )
    assert "WORKBENCH_EGRESS_ALLOW=127.0.0.1/32 allows it" in failing_page["cause"]


def wide_page(chromium, base: str, width: int) -> Any:
    def make() -> Any:
        context = chromium.browser.new_context(
            base_url=base, viewport={"width": width, "height": 900}
        )
        context.set_default_timeout(15_000)
        page = context.new_page()
        page.on("console", chromium._note_csp)
        return page

    return chromium.run(make)


def test_the_call_log_fits_1400_px(chromium, live_gateway, gateway_in_use, plain_http_cookies):
    base = live_gateway.url.removesuffix("/mcp")
    page = wide_page(chromium, base, 1400)

    def call_log() -> dict[str, Any]:
        login(page, "olga", PASSWORD)
        page.goto("/admin/calls/callrecord/")
        headers = page.locator("#result_list thead th")
        return {
            "headers": [" ".join(text.split()).lower() for text in headers.all_inner_texts()],
            "rightmost": max(
                (box := header.bounding_box())["x"] + box["width"] for header in headers.all()
            ),
            "overflow": page.evaluate(
                "(() => { const r = document.querySelector('#changelist .results');"
                " return r.scrollWidth - r.clientWidth; })()"
            ),
            "page overflow": page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            ),
            "times": page.locator("#result_list .field-when").all_inner_texts(),
            "calls": page.locator("#result_list td.field-call").all_inner_texts(),
            "note": page.inner_text("#opens-hidden"),
        }

    seen = chromium.run(call_log)
    chromium.shot(page, "overview-05-call-log-1400px")
    assert seen["headers"][1:] == [
        "time",
        "tenant",
        "key prefix",
        "client",
        "call",
        "outcome",
        "ms",
        "incident id",
    ]
    assert seen["overflow"] <= 0 and seen["page overflow"] <= 0
    assert seen["rightmost"] <= 1400
    assert len(seen["times"]) == ECHOES + 1 and all(SECONDS.fullmatch(t) for t in seen["times"])
    assert not any(call.startswith("open_toolbox") for call in seen["calls"])
    assert seen["note"].startswith("Successful open_toolbox calls are hidden")

    def show_opens() -> list[str]:
        page.click("#opens-hidden a")
        page.wait_for_selector("text=open_toolbox dev")
        return page.locator("#result_list td.field-call").all_inner_texts()

    calls = chromium.run(show_opens)
    assert calls[-1] == "open_toolbox dev" and len(calls) == ECHOES + 2


def test_the_consent_page_is_a_page_of_its_own(
    chromium, live_gateway, transactional_db, plain_http_cookies
):
    base = live_gateway.url.removesuffix("/mcp")
    setup = make_tenant_setup("acme")
    setup.toolbox("dev")
    ada = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=ada, tenant=setup.tenant, role="admin")
    sign_in = SignIn(Client())
    assert sign_in.register().status_code == 201
    url = sign_in.authorize_url(resource=f"{base}/mcp")
    page = chromium.new_page(base)

    def consent() -> dict[str, Any]:
        login(page, "ada", PASSWORD)
        page.goto(url)
        page.wait_for_selector("#consent")
        return {
            "title": page.inner_text("#consent-title"),
            "menu": page.locator("#nav-sidebar").count(),
            "user tools": page.locator("#user-tools").count(),
            "breadcrumbs": page.locator(".breadcrumbs").count(),
            "client": " ".join(page.inner_text("#client").split()),
            "width": page.locator("#container").bounding_box()["width"],
        }

    seen = chromium.run(consent)
    chromium.shot(page, "overview-06-consent-page")
    assert seen["title"] == "Connect a client to Workbench"
    assert (seen["menu"], seen["user tools"], seen["breadcrumbs"]) == (0, 0, 0)
    assert seen["client"].startswith("Claude (unverified: this client registered itself) asks")
    assert seen["width"] < 800
