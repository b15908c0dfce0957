"""In a real browser: an operator creates a tenant and invites its admin; the admin sets a
password, makes a toolbox and a key limited to it, and the key works from the SDK client;
another tenant's admin sees none of it."""

from __future__ import annotations

import asyncio
import json
import re
import sys

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError

from accounts.models import Membership
from calls.models import CallRecord
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.results import payload, text_of, use
from tests.harness.waits import wait_until
from toolboxes.models import ApiKey, CatalogEntry, CatalogParameter, Server, Tenant, Toolbox

# The admin in Chromium: the same flows whatever the test database (tests/accounts checks
# every admin path on both), so one pass runs them: the SQLite one.
pytestmark = pytest.mark.once

KEY_RE = re.compile(r"wb_[a-z0-9]{8}_[A-Za-z0-9_-]{43}")
OPERATOR_PASSWORD = "pw-operator-browser-1"
GLOBEX_PASSWORD = "pw-globex-browser-1"
NEW_PASSWORD = "ada-chose-this-passphrase-7"
CATALOG_TOKEN = "tok-catalog-secret-0451"


@pytest.fixture
def people(transactional_db):
    User.objects.create_superuser("olga", password=OPERATOR_PASSWORD)
    globex = Tenant.objects.create(slug="globex", name="Globex")
    Toolbox.objects.create(tenant=globex, name="globex-box", description="Globex tools")
    gus = User.objects.create_user("gus", password=GLOBEX_PASSWORD, is_staff=True)
    Membership.objects.create(user=gus, tenant=globex, role="admin")
    fixture_entry()


def fixture_entry() -> CatalogEntry:
    """The operator's catalog: the fixture server, its token a secret parameter."""
    entry = CatalogEntry.objects.create(
        name="io.example/fixture",
        title="Fixture",
        command=sys.executable,
        args=[FIXTURE_SERVER],
        env={"FIXTURE_TOKEN": "{{token}}"},
    )
    CatalogParameter.objects.create(
        entry=entry, name="token", description="The API token", required=True, secret=True
    )
    return entry


def login(page, username: str, password: str) -> None:
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_load_state()


def test_operator_invites_a_tenant_admin_who_makes_a_working_key(
    chromium, live_gateway, people, plain_http_cookies
):
    base = live_gateway.url.removesuffix("/mcp")
    shot = chromium.shot

    # The operator: a tenant, and its admin invited.
    operator = chromium.new_page(base)

    def create_tenant_and_invite() -> str:
        login(operator, "olga", OPERATOR_PASSWORD)
        operator.goto("/admin/toolboxes/tenant/add/")
        operator.fill("#id_slug", "acme")
        operator.fill("#id_name", "Acme")
        operator.click("input[name=_save]")
        operator.wait_for_selector("text=was added successfully")
        operator.goto("/admin/accounts/membership/add/")
        operator.select_option("#id_tenant", label="Acme")
        operator.fill("#id_username", "ada")
        operator.select_option("#id_role", "admin")
        operator.click("input[name=_save]")
        return operator.input_value("#one-time-password")

    one_time_password = chromium.run(create_tenant_and_invite)
    shot(operator, "01-operator-invited-admin")
    assert Membership.objects.get(user__username="ada").role == "admin"

    # The tenant admin: the one-time password leads to the password change, then the admin.
    ada = chromium.new_page(base)

    def first_login() -> str:
        login(ada, "ada", one_time_password)
        ada.wait_for_selector("#id_new_password1")
        return ada.url

    assert chromium.run(first_login).endswith("/admin/password_change/")
    shot(ada, "02-admin-first-login-must-change-password")

    def change_password_and_make_toolboxes() -> None:
        ada.fill("#id_old_password", one_time_password)
        ada.fill("#id_new_password1", NEW_PASSWORD)
        ada.fill("#id_new_password2", NEW_PASSWORD)
        ada.click("input[type=submit]")
        ada.wait_for_selector("text=Your password was changed")
        for name in ("research", "scratch"):
            ada.goto("/admin/toolboxes/toolbox/add/")
            ada.select_option("#id_tenant", label="Acme")
            ada.fill("#id_name", name)
            ada.fill("#id_description", f"{name} tools")
            ada.click("input[name=_save]")
            ada.wait_for_selector("text=was added successfully")

    chromium.run(change_password_and_make_toolboxes)
    shot(ada, "03-admin-toolboxes")
    research = Toolbox.objects.get(tenant__slug="acme", name="research")

    def add_server_from_the_catalog() -> str:
        ada.goto("/admin/toolboxes/server/add/")
        ada.select_option("#id_toolbox", label="acme/research")
        ada.fill("#id_name", "fixture")
        with ada.expect_navigation():  # picking an entry brings its parameters
            ada.select_option("#id_catalog_entry", label="io.example/fixture")
        ada.wait_for_selector('input[name="parameter_values__token"][type="password"]')
        ada.fill('input[name="parameter_values__token"]', CATALOG_TOKEN)
        html = ada.content()
        ada.click("input[name=_save]")
        ada.wait_for_selector("text=was added successfully")
        return html

    form_html = chromium.run(add_server_from_the_catalog)
    shot(ada, "035-admin-server-from-the-catalog")
    for raw in ('name="command"', 'name="args"', 'name="url"', 'name="mounts"'):
        assert raw not in form_html  # a tenant admin never sees what the entry runs
    server = Server.objects.get(toolbox=research, name="fixture")
    assert server.catalog_entry.name == "io.example/fixture"
    assert server.secret_parameters == {"token": CATALOG_TOKEN}
    assert CATALOG_TOKEN not in chromium.run(
        lambda: (ada.goto(f"/admin/toolboxes/server/{server.pk}/change/"), ada.content())[1]
    )

    def create_limited_key() -> str:
        ada.goto("/admin/toolboxes/apikey/add/")
        ada.select_option("#id_tenant", label="Acme")
        ada.fill("#id_label", "laptop")
        ada.select_option("#id_toolboxes_from", label="acme/research")
        ada.click("#id_toolboxes_add")
        ada.click("input[name=_save]")
        ada.wait_for_selector("text=will not be shown again")
        return KEY_RE.search(ada.content()).group(0)

    key = chromium.run(create_limited_key)
    shot(ada, "04-admin-key-created-once")
    api_key = ApiKey.objects.get(label="laptop")
    assert api_key.matches(key) and list(api_key.toolboxes.all()) == [research]

    # The key, from the SDK's client: only the toolbox it is limited to.
    async def use_key() -> tuple[str, list[str], str]:
        async with live_gateway.session(key) as session:
            instructions = (await session.initialize()).instructions or ""
            data = payload(await session.call_tool("open_toolbox", {"toolbox": "research"}))
            env = await session.call_tool("use_tool", use("research", "fixture", "env"))
        return instructions, [tool["name"] for tool in data["tools"]], text_of(env)

    instructions, tools, env = asyncio.run(use_key())
    assert "research" in instructions and "scratch" not in instructions
    assert "echo" in tools
    assert json.loads(env)["FIXTURE_TOKEN"] == CATALOG_TOKEN  # the secret reached the server

    # The call log, written in batches off the request path: the admin reads its calls.
    def both_calls_logged() -> bool:
        try:
            return CallRecord.objects.filter(tenant__slug="acme").count() == 2
        except OperationalError:  # shared-cache SQLite: the writer holds the table right now
            return False

    wait_until(both_calls_logged, 15, "the call log's batches (open_toolbox, use_tool)")
    call_log = chromium.run(
        lambda: (ada.goto("/admin/calls/callrecord/"), ada.inner_text("#result_list"))[1]
    )
    shot(ada, "045-admin-call-log")
    assert "env" in call_log and "research" in call_log and CATALOG_TOKEN not in call_log

    # Another tenant's admin: none of it, and its URLs are 404.
    gus = chromium.new_page(base)

    def look_around() -> dict[str, object]:
        login(gus, "gus", GLOBEX_PASSWORD)
        seen = {}
        for name in ("toolbox", "apikey", "server", "tenant"):
            gus.goto(f"/admin/toolboxes/{name}/")
            seen[name] = gus.content()
        gus.goto("/admin/calls/callrecord/")
        seen["calls"] = gus.content()
        gus.goto("/admin/toolboxes/toolbox/")
        seen["status"] = gus.goto(f"/admin/toolboxes/toolbox/{research.pk}/change/").status
        return seen

    seen = chromium.run(look_around)
    shot(gus, "05-other-tenant-admin-gets-404")
    assert seen.pop("status") == 404
    for name, html in seen.items():
        assert "research" not in html and "laptop" not in html and "Acme" not in html, name
    assert "globex-box" in seen["toolbox"] and "Globex" in seen["tenant"]
    chromium.run(lambda: gus.goto("/admin/toolboxes/toolbox/"))
    shot(gus, "06-other-tenant-admin-toolboxes")
