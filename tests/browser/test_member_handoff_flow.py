"""In a real browser: an operator adds a new member and is taken, away from the POST, to a
page that shows the one-time password once with a copy button (the API key's hand-off);
a reload shows it no more and adds nobody; the copied password logs the member in (and
no page's favicon is logged as missing)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership
from tests.browser.test_tenant_admin_flow import login
from toolboxes.models import Tenant

# The admin in Chromium: the same flows whatever the test database, so one pass runs them.
pytestmark = pytest.mark.once

PASSWORD = "pw-member-handoff-1"
SHOWN_ONCE = (
    "Copy this one-time password now and hand it to ada. It will not be shown again: only "
    "its hash is stored, and it must be changed at the first login."
)
GONE = (
    "The one-time password of ada was shown once, when the member was added, and cannot be "
    "shown again: only its hash is stored."
)


@pytest.fixture
def acme(transactional_db):
    User.objects.create_superuser("olga", password=PASSWORD)
    return Tenant.objects.create(slug="acme", name="Acme")


def test_a_new_members_password_is_handed_over_once(
    chromium, live_gateway, acme, plain_http_cookies, caplog
):
    base = live_gateway.url.removesuffix("/mcp")

    page = chromium.new_page(base, clipboard=True)

    def add_member() -> dict[str, str]:
        login(page, "olga", PASSWORD)
        page.goto("/admin/accounts/membership/add/")
        page.select_option("#id_tenant", label="Acme")
        page.fill("#id_username", "ada")
        page.select_option("#id_role", "admin")
        page.click("input[name=_save]")
        page.wait_for_selector("#copy-one-time-password")
        page.click("#copy-one-time-password")
        page.wait_for_selector("#copy-one-time-password:has-text('Copied')")
        return {
            "url": page.url,
            "title": page.inner_text("h1"),
            "note": page.inner_text(".errornote"),
            "shown": page.input_value("#one-time-password"),
            "copied": page.evaluate("navigator.clipboard.readText()"),
        }

    seen = chromium.run(add_member)
    chromium.shot(page, "member-handoff-01-password-shown-once")
    membership = Membership.objects.get(user__username="ada")
    assert seen["url"].endswith(f"/admin/accounts/membership/{membership.pk}/handoff/")
    assert (seen["title"], seen["note"]) == ("Member added", SHOWN_ONCE)
    assert seen["copied"] == seen["shown"] and membership.user.check_password(seen["copied"])

    def reload() -> dict[str, object]:
        page.reload()  # a GET: nothing to resubmit
        page.wait_for_selector("#password-not-shown")
        return {
            "note": page.inner_text("#password-not-shown"),
            "field": page.locator("#one-time-password").count(),
            "html": page.content(),
        }

    again = chromium.run(reload)
    chromium.shot(page, "member-handoff-02-reloaded-password-gone")
    assert again["note"] == GONE and again["field"] == 0
    assert seen["shown"] not in str(again["html"])
    assert Membership.objects.count() == 1 and User.objects.filter(username="ada").count() == 1

    member = chromium.new_page(base)

    def first_login() -> str:
        login(member, "ada", seen["copied"])
        member.wait_for_selector("#id_new_password1")
        return member.url

    assert chromium.run(first_login).endswith("/admin/password_change/")
    # Chromium asked for /favicon.ico on each page: answered, so nothing was logged missing.
    assert "Not Found" not in caplog.text
