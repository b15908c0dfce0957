"""In a real browser: a member opens "Connected accounts", connects their account at an
OAuth-protected server (the vendor's sign-in page, then back to Workbench), and their
personal key's calls then act as them downstream; Disconnect revokes it at the vendor."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx2
import pytest
from django.contrib.auth.models import User

from accounts.models import Membership
from tests.browser.test_tenant_admin_flow import login
from tests.harness.results import text_of, use
from tests.harness.servers import server_process
from tests.harness.waits import wait_until
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

pytestmark = pytest.mark.once

PASSWORD = "pw-connected-browser-1"


@pytest.fixture(scope="module")
def vendor() -> Iterator[str]:
    with server_process("oauth_server.py") as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def ada_key(transactional_db, vendor) -> str:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    dev = Toolbox.objects.create(tenant=tenant, name="dev", description="Development tools")
    Server.objects.create(
        toolbox=dev,
        name="github",
        transport="streamable-http",
        url=f"{vendor}/mcp",
        auth="oauth_person",
    )
    ada = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=ada, tenant=tenant, role="admin")
    return ApiKey.issue(tenant, label="ada's laptop", owner=ada)[1]


async def whoami(live_gateway, key: str) -> str:
    async with live_gateway.session(key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        return text_of(await session.call_tool("use_tool", use("dev", "github", "whoami")))


def test_connect_use_and_disconnect(chromium, live_gateway, ada_key, vendor, plain_http_cookies):
    base = live_gateway.url.removesuffix("/mcp")
    page = chromium.new_page(base)
    row = "#connected-accounts tbody tr"

    def connect() -> str:
        login(page, "ada", PASSWORD)
        page.goto("/admin/connections/signin/")
        assert page.inner_text(f"{row} .status") == "not connected"
        chromium_shot("connected-accounts-not-connected")
        page.click(f"{row} a.connect")
        page.wait_for_url(f"{vendor}/login*")
        page.fill("input[name=subject]", "ada-in-chromium")
        page.click("button")
        page.wait_for_url(f"{base}/connections/callback/*")
        return page.inner_text("#message")

    def chromium_shot(name: str) -> None:
        page.screenshot(path=str(chromium.screenshots / f"{name}.png"), full_page=True)

    message = chromium.run(connect)
    assert message == (
        "Connected to 'github'. Go back to your client: its next call to 'github' uses "
        "this account."
    )
    assert asyncio.run(whoami(live_gateway, ada_key)) == "ada-in-chromium"

    def disconnect() -> tuple[str, str]:
        page.goto("/admin/connections/signin/")
        status = page.inner_text(f"{row} .status")
        chromium_shot("connected-accounts-connected")
        page.click(f"{row} button.disconnect")
        page.wait_for_load_state()
        chromium_shot("connected-accounts-disconnected")
        return status, page.inner_text(".messagelist")

    assert chromium.run(disconnect) == ("connected", "Disconnected from 'github'.")

    def revoked() -> bool:  # at the vendor (RFC 7009), on the revoking thread
        return httpx2.get(f"{vendor}/_tokens?subject=ada-in-chromium").json()["live"] == 0

    wait_until(revoked, 10, "the tokens revoked at the vendor")
