"""In a real browser: a tenant's admin types what a model would ask for into the search box of
a toolbox's page, then of the tenant's, and sees the tools a model would find, best first;
filtered and held tools are not there, servers never listed are named, and a query that
finds nothing says so."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership
from tests.accounts.conftest import OTHER_SECRET, SECRET, _tenant
from tests.browser.test_tenant_admin_flow import login
from tests.toolboxes.search_world import search_world

pytestmark = pytest.mark.once  # the admin's flows need one database's pass (the SQLite one)

PASSWORD = "pw-tool-search-browser-1"


@pytest.fixture
def world(transactional_db):
    acme, _, files_box = search_world(_tenant("acme", SECRET), _tenant("globex", OTHER_SECRET))
    ada = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=ada, tenant=acme.tenant, role="admin")
    return acme, files_box


def test_a_tenant_admin_sees_what_a_model_would_find(
    chromium, live_gateway, world, plain_http_cookies
):
    acme, _ = world
    base = live_gateway.url.removesuffix("/mcp")
    page = chromium.new_page(base)

    def rows() -> list[str]:
        cells = page.locator("#wb-tool-results tbody tr")
        return [" | ".join(line.split("\t")).strip() for line in cells.all_inner_texts()]

    def search(query: str, shown: str) -> None:
        page.fill("#wb-tool-search-q", query)
        page.click("form.wb-tool-search input[type=submit]")
        page.wait_for_selector(shown)

    def the_toolbox_page() -> str:
        login(page, "ada", PASSWORD)
        page.goto(f"/admin/toolboxes/toolbox/{acme.toolbox.pk}/change/")
        return page.inner_text("form.wb-tool-search label")

    assert chromium.run(the_toolbox_page) == "Search the tools of this toolbox as a model would"
    chromium.shot(page, "tool-search-01-the-box-on-a-toolbox-page")

    def in_the_toolbox() -> tuple[list[str], str, str]:
        search("current time", "#wb-tool-results")
        return rows(), page.inner_text("#wb-not-searched"), page.input_value("#wb-tool-search-q")

    found, not_searched, kept = chromium.run(in_the_toolbox)
    chromium.shot(page, "tool-search-02-found-in-the-toolbox")
    server = "acme-tools/acme-time"
    assert found == [
        f"1 | {server}/get_current_time | Current time in a timezone | {server}",
        f"2 | {server}/convert_time | Convert a time between timezones | {server}",
    ]
    assert not_searched == ("acme-tools/acme-remote: not searched: never listed — check the server")
    assert kept == "current time"  # the box holds the query, to refine it

    def the_tenant_page() -> str:
        page.goto(f"/admin/toolboxes/tenant/{acme.tenant.pk}/change/")
        return page.inner_text("form.wb-tool-search label")

    assert chromium.run(the_tenant_page) == "Search the tools of this tenant as a model would"
    chromium.shot(page, "tool-search-03-the-box-on-the-tenant-page")

    def in_the_tenant() -> tuple[list[str], str]:
        search("send or read a file on disk", "#wb-tool-results")
        return rows(), page.inner_text("#wb-not-searched")

    found, not_searched = chromium.run(in_the_tenant)
    chromium.shot(page, "tool-search-04-found-in-the-tenant")
    # wipe_disk is filtered out, send_file's changed definition held for approval
    assert found == ["1 | files/disk/read_file | Read a file from disk | files/disk"]
    assert not_searched.splitlines() == [
        "acme-tools/acme-remote: not searched: never listed — check the server",
        "files/legacy: not searched: its last check failed — check the server",
    ]

    def nothing() -> str:
        search("zebra migration", "#wb-no-match")
        return page.inner_text("#wb-no-match")

    assert chromium.run(nothing) == "No tool matches “zebra migration”."
    chromium.shot(page, "tool-search-05-no-match")
