"""In a real browser: a tenant admin makes a personal API token for themself, copies it from
its hand-off page (shown once: a reload shows it no more), and the token works at /api/v1
and is refused at /mcp; the API's interactive docs render under the admin's CSP."""

from __future__ import annotations

import re

import httpx2
import pytest
from django.contrib.auth.models import User

from accounts.key_refusals import API_TOKEN_REFUSED
from accounts.models import Membership
from tests.browser.test_tenant_admin_flow import login
from tests.harness.results import INITIALIZE_PARAMS, raw_rpc, refusal_json
from toolboxes.models import Tenant, Toolbox

pytestmark = pytest.mark.once

TOKEN_RE = re.compile(r"wbp_[a-z0-9]{8}_[A-Za-z0-9_-]{43}")
PASSWORD = "pw-token-browser-1"


@pytest.fixture
def ada(transactional_db):
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    Toolbox.objects.create(tenant=tenant, name="research", description="Research tools")
    user = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=user, tenant=tenant, role="admin")
    return user


def test_a_member_makes_copies_and_uses_an_api_token(
    chromium, live_gateway, ada, plain_http_cookies
):
    base = live_gateway.url.removesuffix("/mcp")

    def new_page():
        context = chromium.browser.new_context(
            base_url=base,
            viewport={"width": 1280, "height": 900},
            permissions=["clipboard-read", "clipboard-write"],
        )
        context.set_default_timeout(15_000)
        return context.new_page()

    page = chromium.run(new_page)

    def create() -> str:
        login(page, "ada", PASSWORD)
        page.goto("/admin/accounts/apitoken/add/")
        page.fill("#id_name", "deploys from CI")
        page.select_option("#id_tenant", label="Acme")
        page.select_option("#id_expires_in_days", "30")
        page.click("input[name=_save]")
        page.wait_for_selector("#new-api-token")
        page.click("#copy-new-api-token")
        page.wait_for_selector("#copy-new-api-token:has-text('Copied')")
        return page.evaluate("navigator.clipboard.readText()")

    token = chromium.run(create)
    chromium.shot(page, "api-token-created")
    assert TOKEN_RE.fullmatch(token)

    def reload() -> str:
        page.reload()
        return page.content()

    again = chromium.run(reload)
    chromium.shot(page, "api-token-reloaded")
    assert not TOKEN_RE.search(again) and "was shown once" in again

    with httpx2.Client(timeout=30) as http:
        me = http.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200 and me.json()["roles"] == {"acme": "admin"}

    def mcp() -> httpx2.Response:
        import anyio

        async def call() -> httpx2.Response:
            async with httpx2.AsyncClient(timeout=30) as http:
                return await raw_rpc(
                    http, live_gateway.url, "initialize", INITIALIZE_PARAMS,
                    headers={"Authorization": f"Bearer {token}"},
                )  # fmt: skip

        return anyio.run(call)

    refused = mcp()
    assert refused.json() == refusal_json(401, "api_token", API_TOKEN_REFUSED)

    def docs() -> str:
        page.goto("/api/v1/docs")
        page.wait_for_selector(".swagger-ui .opblock", timeout=15_000)
        return page.content()

    html = chromium.run(docs)
    chromium.shot(page, "api-docs")
    assert "Workbench management API" in html
