"""In a real browser: a tenant's admin denies one tool to one key on the tool policies'
page, sees in "Who may call this" that this key is denied and the others not, and the
running gateway refuses that key the tool with the contract's text."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User

from accounts.models import Membership
from tests.browser.test_tenant_admin_flow import login
from tests.harness.live import issue_key
from tests.harness.results import error_of, payload, use
from toolboxes.models import Tenant, ToolPolicy

pytestmark = pytest.mark.once  # the admin's flows need one database's pass (the SQLite one)

PASSWORD = "pw-tool-policy-browser-1"
FORBIDDEN = "Error executing tool: Tool 'echo' in server 'fixture' is not allowed for this caller"


@pytest.fixture
def setup(transactional_db):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    ada = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=ada, tenant=tenant, role="admin")
    setup = issue_key(tenant)
    toolbox = setup.toolbox("dev")
    setup.fixture_server(toolbox, "fixture")
    return setup, issue_key(tenant)


def test_a_tenant_admin_denies_a_tool_to_one_key(chromium, live_gateway, setup, plain_http_cookies):
    denied, other = setup
    base = live_gateway.url.removesuffix("/mcp")
    page = chromium.new_page(base)

    def add_rule() -> str:
        login(page, "ada", PASSWORD)
        page.goto("/admin/toolboxes/toolpolicy/add/")
        page.select_option("#id_tenant", label="Acme")
        page.select_option("#id_effect", "deny")
        page.select_option("#id_toolbox", label="acme/dev")
        page.fill("#id_server", "fixture")
        page.fill("#id_tool", "echo")
        page.select_option("#id_subject", "key")
        page.select_option("#id_api_key", label=str(denied.api_key))
        page.click("input[name=_save]")
        page.wait_for_selector("#result_list")
        return page.inner_text("#result_list tbody tr")

    row = chromium.run(add_rule)
    assert "toolbox 'dev', server 'fixture', tool 'echo'" in row
    assert f"key {denied.api_key}" in row
    chromium.shot(page, "tool-policy-01-rule-listed")
    assert ToolPolicy.objects.get().api_key == denied.api_key

    def who() -> list[str]:
        page.click("#who-may-call")
        page.fill("#who-toolbox", "dev")
        page.fill("#who-server", "fixture")
        page.fill("#who-tool", "echo")
        page.click("#who-form input[type=submit]")
        page.wait_for_selector("#who-verdicts")
        return [row.inner_text() for row in page.query_selector_all("#who-verdicts tbody tr")]

    rows = chromium.run(who)
    chromium.shot(page, "tool-policy-02-who-may-call-this")
    by_key = {line.split("\t")[0]: line for line in rows}
    assert (
        "denied by: toolbox 'dev', server 'fixture', tool 'echo', key"
        in by_key[f"{denied.api_key} (tenant key)"]
    )
    assert "allowed: no rule applies" in by_key[f"{other.api_key} (tenant key)"]

    @async_to_sync
    async def calls() -> tuple:
        results = []
        for key in (denied.key, other.key):
            async with live_gateway.session(key) as session:
                payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
                call = use("dev", "fixture", "echo", {"text": "x"})
                results.append(await session.call_tool("use_tool", call))
        return tuple(results)

    refused, allowed = calls()
    assert error_of(refused) == ("FORBIDDEN", FORBIDDEN)
    assert not allowed.is_error
