"""In a real browser: an operator adds a server from the catalog as a tenant admin does. The
catalog comes first; picking an entry shows its parameters at once (no save) and puts a
server of one's own (the second way) out of sight; the saved server shows what it runs,
and its check connects. On a toolbox's page too, a new server's entry brings its
parameters without a save."""

from __future__ import annotations

import sys

import pytest
from django.contrib.auth.models import User

from tests.browser.test_tenant_admin_flow import fixture_entry, login
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.waits import wait_until
from toolboxes.models import Server, Tenant, Toolbox

# The admin in Chromium: the same flows whatever the test database (tests/accounts checks
# every admin path on both), so one pass runs them: the SQLite one.
pytestmark = pytest.mark.once

PASSWORD = "pw-operator-catalog-1"
TOKEN = "tok-operator-catalog-0452"


@pytest.fixture
def catalog(transactional_db) -> Toolbox:
    User.objects.create_superuser("olga", password=PASSWORD)
    fixture_entry()
    return Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme", name="Acme"), name="dev", description="Dev"
    )


def test_operator_adds_a_server_from_the_catalog(
    chromium, live_gateway, catalog, plain_http_cookies
):
    base = live_gateway.url.removesuffix("/mcp")
    page = chromium.new_page(base)

    def open_the_add_form() -> dict[str, object]:
        login(page, "olga", PASSWORD)
        page.goto("/admin/toolboxes/server/add/")
        catalog_top = page.locator("fieldset.wb-catalog").bounding_box()["y"]
        return {
            "catalog first": catalog_top < page.locator("#id_command").bounding_box()["y"],
            "catalog open": page.is_visible("#id_catalog_entry"),
            "own server shown": page.is_visible("#id_command"),
            "second way": page.inner_text("fieldset.wb-raw h2"),
        }

    seen = chromium.run(open_the_add_form)
    chromium.shot(page, "operator-catalog-01-add-form")
    assert seen == {
        "catalog first": True,
        "catalog open": True,
        "own server shown": True,
        "second way": "Or a server of your own",
    }

    def pick_the_entry() -> dict[str, object]:
        page.select_option("#id_toolbox", label="acme/dev")
        page.fill("#id_name", "fixture")
        with page.expect_navigation():  # picking an entry brings its parameters
            page.select_option("#id_catalog_entry", label="io.example/fixture")
        token = page.locator('input[name="parameter_values__token"]')
        token.wait_for()
        return {
            "kept": (page.input_value("#id_name"), page.input_value("#id_toolbox")),
            "token is a secret input": token.get_attribute("type"),
            "token visible": token.is_visible(),
            "own server shown": page.is_visible("#id_command") or page.is_visible("#id_transport"),
        }

    seen = chromium.run(pick_the_entry)
    chromium.shot(page, "operator-catalog-02-entry-picked-parameters-shown")
    assert seen == {
        "kept": ("fixture", str(catalog.pk)),
        "token is a secret input": "password",
        "token visible": True,
        "own server shown": False,
    }

    def save() -> str:
        page.fill('input[name="parameter_values__token"]', TOKEN)
        page.click("input[name=_continue]")
        page.wait_for_selector("text=was added successfully")
        return page.inner_text("fieldset.wb-catalog")

    shown = chromium.run(save)
    chromium.shot(page, "operator-catalog-03-saved-server-shows-what-it-runs")
    server = Server.objects.get(toolbox=catalog, name="fixture")
    assert server.catalog_entry.name == "io.example/fixture"
    assert (server.command, server.args, server.secret_parameters) == ("", [], {"token": TOKEN})
    assert f"{sys.executable} {FIXTURE_SERVER} (with FIXTURE_TOKEN)" in shown
    assert TOKEN not in shown
    assert not chromium.run(lambda: page.is_visible("#id_command"))

    chromium.run(lambda: page.click("button.wb-check"))

    def checked() -> bool:
        server.refresh_from_db()
        return server.last_check_ok is True

    wait_until(checked, 30, "the catalog-made server's check")
    chromium.shot(page, "operator-catalog-04-checked")


def test_operator_adds_a_catalog_server_on_the_toolbox_page(
    chromium, live_gateway, catalog, plain_http_cookies
):
    base = live_gateway.url.removesuffix("/mcp")
    page = chromium.new_page(base)

    def add_inline() -> dict[str, object]:
        login(page, "olga", PASSWORD)
        page.goto(f"/admin/toolboxes/toolbox/{catalog.pk}/change/")
        page.click(".inline-group .add-row a")
        page.fill('input[name="servers-0-name"]', "fixture")
        url = page.url
        page.select_option('select[name="servers-0-catalog_entry"]', label="io.example/fixture")
        token = page.locator('input[name="servers-0-parameter_values__token"]')
        token.wait_for()  # no navigation, no save
        label = page.locator('label[for="id_servers-0-parameter_values__token"]')
        return {
            "same page": page.url == url,
            "token": (token.get_attribute("type"), token.is_visible(), label.inner_text()),
            "own server shown": page.is_visible('input[name="servers-0-command"]'),
        }

    seen = chromium.run(add_inline)
    chromium.shot(page, "operator-catalog-05-toolbox-page-entry-picked")
    assert seen == {
        "same page": True,
        "token": ("password", True, "token"),
        "own server shown": False,
    }

    def save() -> None:
        page.fill('input[name="servers-0-parameter_values__token"]', TOKEN)
        page.click("input[name=_continue]")
        page.wait_for_selector("text=was changed successfully")

    chromium.run(save)
    chromium.shot(page, "operator-catalog-06-toolbox-page-saved")
    server = Server.objects.get(toolbox=catalog, name="fixture")
    assert (server.catalog_entry.name, server.secret_parameters) == (
        "io.example/fixture",
        {"token": TOKEN},
    )
