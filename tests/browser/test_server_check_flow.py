"""In a real browser: an operator opens a server never checked (fields shown by transport),
checks it (in the background: "checking…", then its tools listed in place), picks filters
from those tools, saves, and sees the status in the server list; saving a slow server
shows "checking…" in the list, then its result, without a reload. A screenshot of each
screen."""

from __future__ import annotations

import re
import sys
import time
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.harness.paths import FIXTURE_SERVER
from toolboxes.models import Server, Tenant, Toolbox

# The admin in Chromium: the same flows whatever the test database (tests/accounts checks
# every admin path on both), so one pass runs them: the SQLite one.
pytestmark = pytest.mark.once

PASSWORD = "pw-operator-check-1"
# The fixture server, slow to start as a cold `npx` server is: its check takes seconds.
SLOW_START = [
    "-c",
    "import runpy, sys, time; time.sleep(3); path = sys.argv.pop(1); "
    "runpy.run_path(path, run_name='__main__')",
    FIXTURE_SERVER,  # an argument of its own: the sandbox shows the files named so
]


@pytest.fixture
def fixture_server(transactional_db):
    User.objects.create_superuser("olga", password=PASSWORD)
    toolbox = Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme", name="Acme"), name="dev", description="Dev"
    )
    server = Server(toolbox=toolbox, name="fixture", command=sys.executable, args=[FIXTURE_SERVER])
    server.full_clean()
    server.save()
    return server


def test_check_a_server_and_pick_its_filters(
    chromium, live_gateway, fixture_server, plain_http_cookies
):
    base = live_gateway.url.removesuffix("/mcp")
    page = chromium.new_page(base)
    change = f"/admin/toolboxes/server/{fixture_server.pk}/change/"

    def open_the_server() -> dict[str, bool]:
        page.goto("/admin/login/?next=/admin/")
        page.fill("#id_username", "olga")
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_load_state()
        page.goto(change)
        page.wait_for_selector("text=The server has not been checked yet")
        seen = {"remote shown for stdio": page.is_visible("fieldset.wb-remote")}
        page.select_option("#id_transport", "streamable-http")
        seen["command shown for remote"] = page.is_visible("fieldset.wb-stdio")
        seen["url shown for remote"] = page.is_visible("#id_url")
        page.select_option("#id_transport", "stdio")
        rows = page.locator("table.wb-rows").first.locator("tbody tr")  # env
        before = rows.count()
        page.click("button.wb-add-row")
        seen["a row added"] = rows.count() == before + 1
        seen["its name input"] = page.is_visible(f"input[name=env__name__{before}]")
        return seen

    seen = chromium.run(open_the_server)
    assert seen == {
        "remote shown for stdio": False,
        "command shown for remote": False,
        "url shown for remote": True,
        "a row added": True,
        "its name input": True,
    }
    chromium.shot(page, "check-01-server-form-not-checked")

    def check() -> tuple[str, str]:
        page.click("button.wb-check")
        page.wait_for_selector("#check-summary")  # filled in place when the check ends
        return page.url, page.inner_text("#check-summary")

    url, summary = chromium.run(check)
    assert url.endswith(f"/admin/toolboxes/server/{fixture_server.pk}/check/")
    assert re.fullmatch(r"Server dev/fixture: connected in \d+ ms, \d+ tools\.", summary)
    chromium.shot(page, "check-02-check-result-with-tools")

    def pick_filters() -> str:
        page.click("text=Back to the server")
        page.wait_for_selector("input[name=tool_filters][value=echo]")
        page.uncheck("input[name=tool_filters][value='*']")
        page.check("input[name=tool_filters][value=echo]")
        page.check("input[name=tool_filters][value=add]")
        page.click("input[name=_save]")
        page.wait_for_selector("text=was changed successfully")
        page.wait_for_selector("#result_list .wb-status.wb-ok")  # the save's own check
        return page.inner_text("#result_list")

    listing = chromium.run(pick_filters)
    chromium.shot(page, "check-03-server-list-with-status")
    fixture_server.refresh_from_db()
    assert fixture_server.tool_filters == ["echo", "add"]
    assert "echo, add" in listing and "ok: " in listing

    def toolbox_page() -> str:
        page.goto(f"/admin/toolboxes/toolbox/{fixture_server.toolbox_id}/change/")
        return page.inner_text(".inline-related")

    inline = chromium.run(toolbox_page)
    chromium.shot(page, "check-04-toolbox-page-server-status")
    assert "ok: " in inline and "Check now" in inline


def test_saving_a_server_checks_it_in_the_background(
    chromium, live_gateway, fixture_server, plain_http_cookies
):
    fixture_server.args = SLOW_START
    fixture_server.save()
    base = live_gateway.url.removesuffix("/mcp")
    page = chromium.new_page(base)

    def save() -> str:
        page.goto("/admin/login/?next=/admin/")
        page.fill("#id_username", "olga")
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_load_state()
        page.goto(f"/admin/toolboxes/server/{fixture_server.pk}/change/")
        page.fill("#id_timeout", "90")
        page.click("input[name=_save]")
        page.wait_for_selector("text=was changed successfully")
        page.evaluate("window.wbSamePage = true")  # gone if the page reloads
        return page.inner_text("#result_list .wb-status")

    checking = chromium.run(save)
    assert re.fullmatch(r"checking… [0-2] s", checking), checking

    def progress() -> str:  # the status moves while the check runs
        moved = re.compile(r"^checking… [1-9]\d* s$")
        page.locator("#result_list .wb-status", has_text=moved).wait_for()
        return page.inner_text("#result_list .wb-status")

    assert re.fullmatch(r"checking… [1-9]\d* s", chromium.run(progress))
    chromium.shot(page, "check-05-saved-server-checking")

    def result() -> tuple[str, bool]:
        page.wait_for_selector("#result_list .wb-status.wb-ok", timeout=40_000)
        return page.inner_text("#result_list .wb-status"), page.evaluate("window.wbSamePage")

    status, same_page = chromium.run(result)
    chromium.shot(page, "check-06-saved-server-checked")
    fixture_server.refresh_from_db()
    count, ms = len(fixture_server.last_check_tools), fixture_server.last_check_ms
    assert status == f"ok: {count} tools in {ms} ms, 0 minutes ago"
    assert same_page is True and ms >= 3000

    def check_again() -> tuple[float, str]:
        page.goto(f"/admin/toolboxes/server/{fixture_server.pk}/check/")
        started = time.monotonic()
        page.click("input[name=_check]")
        page.wait_for_selector("#check-state .wb-status.wb-checking")
        return time.monotonic() - started, page.inner_text("#check-state")

    answered_in, state = chromium.run(check_again)
    chromium.shot(page, "check-07-check-page-checking")
    # The page is back before the check (3 s of start-up at least) could have ended.
    assert answered_in < 2.5 and re.fullmatch(r"Last check: checking… [0-2] s", state), state

    def its_result() -> str:
        page.wait_for_selector("#check-summary", timeout=40_000)
        return page.inner_text("#check-summary")

    summary = chromium.run(its_result)
    chromium.shot(page, "check-08-check-page-result")
    assert re.fullmatch(r"Server dev/fixture: connected in \d{4,} ms, \d+ tools\.", summary)

    def one_answer_lost() -> str:  # a lost answer is asked again, not taken for silence
        lost: list[str] = []

        def drop_the_first(route: Any) -> None:
            if lost:
                route.continue_()
            else:
                lost.append(route.request.url)
                route.abort()

        page.route("**/status/**", drop_the_first)
        page.click("input[name=_check]")
        page.wait_for_selector("#check-summary", timeout=40_000)
        page.unroute("**/status/**")
        assert len(lost) == 1
        return page.inner_text("#check-summary")

    assert re.fullmatch(
        r"Server dev/fixture: connected in \d{4,} ms, \d+ tools\.", chromium.run(one_answer_lost)
    )

    def no_answer() -> str:  # the admin unreachable while a check runs: said, not hidden
        page.route("**/status/**", lambda route: route.abort())
        page.click("input[name=_check]")
        lost = "checking… (no answer from the admin: reload the page)"
        page.locator("#check-state .wb-status", has_text=lost).wait_for()
        page.unroute("**/status/**")
        return page.inner_text("#check-state")

    said = chromium.run(no_answer)
    chromium.shot(page, "check-09-check-page-no-answer")
    assert said == "Last check: checking… (no answer from the admin: reload the page)"
