"""In a real browser: a tenant's admin gives one key its own use_tool limit on the key's
page: above the installation's it is refused with the reason, below it is saved, the key
list shows it; and the running gateway refuses that key past its own burst."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User

from accounts.models import Membership
from tests.browser.test_tenant_admin_flow import login
from tests.harness.live import issue_key
from tests.harness.results import error_of, payload, text_of, use
from toolboxes.models import Tenant

pytestmark = pytest.mark.once  # the admin's flows need one database's pass (the SQLite one)

PASSWORD = "pw-key-limits-browser-1"
ABOVE = "Only an operator may set this above the installation's WORKBENCH_KEY_RATE_LIMIT = 50."


@pytest.fixture
def setup(transactional_db, settings):
    settings.WORKBENCH_KEY_RATE_LIMIT = 50.0
    settings.WORKBENCH_KEY_RATE_BURST = 100
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    ada = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=ada, tenant=tenant, role="admin")
    return issue_key(tenant)


def test_a_tenant_admin_limits_one_key(chromium, live_gateway, setup, plain_http_cookies):
    base = live_gateway.url.removesuffix("/mcp")
    api_key = setup.api_key
    page = chromium.new_page(base)

    def set_limit(rate: str, burst: str) -> None:
        page.goto(f"/admin/toolboxes/apikey/{api_key.pk}/change/")
        page.fill("#id_rate_limit", rate)
        page.fill("#id_rate_burst", burst)
        page.click("input[name=_save]")
        page.wait_for_load_state()

    def refused() -> str:
        login(page, "ada", PASSWORD)
        set_limit("100", "1")
        return page.inner_text(".field-rate_limit .errorlist")

    assert chromium.run(refused) == ABOVE
    chromium.shot(page, "key-limits-01-above-the-installation-refused")
    help_text = chromium.run(lambda: page.inner_text("#id_rate_limit_helptext"))
    assert help_text == (
        "use_tool calls a second. Empty: the installation's, 50 (WORKBENCH_KEY_RATE_LIMIT). "
        "At most 50: only operators may raise it."
    )

    def saved() -> str:
        set_limit("0.01", "1")
        page.wait_for_selector("#result_list")
        return page.inner_text("#result_list .field-own_limits")

    assert chromium.run(saved) == "use_tool 0.01/s, burst 1"
    chromium.shot(page, "key-limits-02-saved-and-listed")
    api_key.refresh_from_db()
    assert (api_key.rate_limit, api_key.rate_burst) == (0.01, 1)

    @async_to_sync
    async def calls() -> list:
        toolbox = await setup.atoolbox("dev")
        await setup.afixture_server(toolbox, "fixture")
        async with live_gateway.session(setup.key) as session:
            payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            call = use("dev", "fixture", "echo", {"text": "x"})
            return [await session.call_tool("use_tool", call) for _ in range(2)]

    first, second = calls()
    assert text_of(first) == "x"
    code, text = error_of(second)
    assert code == "RATE_LIMITED"
    assert text.startswith(
        "Error executing tool 'echo' in server 'fixture' (toolbox 'dev'): rate limit reached; "
        "retry in "
    )
