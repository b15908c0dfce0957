"""In a real browser, the people's side of approvals (issue 36): a tenant's admin makes an
"ask" rule and sees "approval required" in "who may call this"; calls held as the gateway
holds them wait in the admin's queue, counted in the menu; the link a caller is given
leads an unsigned admin through the login and back to the approval page, which shows the
masked arguments; one call approved, one refused, each state shown with who and from
where; an expired one has no buttons; the caller of a call cannot approve it alone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from accounts.models import Membership
from calls.models import Approval
from kernel import approvals
from tests.browser.test_tenant_admin_flow import login
from toolboxes.models import Tenant, Toolbox, ToolPolicy

pytestmark = pytest.mark.once  # the admin's flows need one database's pass (the SQLite one)

ADMIN_PASSWORD = "pw-approvals-browser-ada-1"
CALLER_PASSWORD = "pw-approvals-browser-cal-1"
MASKED = '{"path": "/srv/prod.db", "token": "••••••"}'


@pytest.fixture
def acme(transactional_db) -> Tenant:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    Toolbox.objects.create(tenant=tenant, name="dev", description="Development tools")
    ada = User.objects.create_user("ada", password=ADMIN_PASSWORD, is_staff=True)
    Membership.objects.create(user=ada, tenant=tenant, role="admin")
    cal = User.objects.create_user("cal", password=CALLER_PASSWORD, is_staff=True)
    Membership.objects.create(user=cal, tenant=tenant, role="viewer")
    return tenant


def held(tenant: Tenant, tool: str, minutes: float = 15) -> Approval:
    """A call held as the gateway holds it: cal's, by the rule, its arguments masked."""
    return Approval.objects.create(
        tenant=tenant,
        caller="grant:1",
        caller_label="OAuth: cal",
        caller_person=User.objects.get(username="cal"),
        toolbox="dev",
        server="filesystem",
        tool=tool,
        arguments_digest=approvals.arguments_digest({"path": "/srv/prod.db"}),
        arguments_shown=MASKED,
        reason=f"approval required by: toolbox 'dev', tool '{tool}', everyone",
        expires_at=timezone.now() + timedelta(minutes=minutes),
    )


def page_path(approval: Approval) -> str:
    return approvals.PAGE_PATH.format(public_id=approval.public_id)


def test_an_admin_makes_an_ask_rule_and_decides_held_calls(
    chromium, live_gateway, acme, plain_http_cookies
):
    base = live_gateway.url.removesuffix("/mcp")
    admin = chromium.new_page(base)

    def add_rule() -> list[str]:
        login(admin, "ada", ADMIN_PASSWORD)
        admin.goto("/admin/toolboxes/toolpolicy/add/")
        admin.select_option("#id_tenant", label="Acme")
        admin.select_option("#id_effect", "ask")
        admin.select_option("#id_toolbox", label="acme/dev")
        admin.fill("#id_tool", "delete_file")
        admin.fill("#id_approval_minutes", "15")
        admin.click("input[name=_save]")
        admin.wait_for_selector("#result_list")
        admin.click("#who-may-call")
        admin.fill("#who-toolbox", "dev")
        admin.fill("#who-server", "filesystem")
        admin.fill("#who-tool", "delete_file")
        admin.click("#who-form input[type=submit]")
        admin.wait_for_selector("#who-verdicts")
        return [row.inner_text() for row in admin.query_selector_all("#who-verdicts tbody tr")]

    rows = chromium.run(add_rule)
    chromium.shot(admin, "approvals-01-who-may-call-an-ask-rule")
    rule = ToolPolicy.objects.get(tenant=acme)
    assert (rule.effect, rule.tool, rule.approval_minutes) == ("ask", "delete_file", 15)
    assert rows and all("approval required" in row for row in rows)
    assert (
        "approval required by: toolbox 'dev', tool 'delete_file', everyone "
        "(approvers: the tenant's admins)"
    ) in rows[0]

    approve_me, refuse_me = held(acme, "delete_file"), held(acme, "drop_table")
    expired = held(acme, "wipe_disk", minutes=-1)

    def queue() -> tuple[str, list[str]]:
        admin.goto("/admin/calls/approval/")
        admin.wait_for_selector("#result_list")
        menu = admin.inner_text("#nav-sidebar")
        cells = admin.query_selector_all("#result_list tbody td.field-status_shown")
        return menu, [cell.inner_text() for cell in cells]

    menu, listed = chromium.run(queue)
    chromium.shot(admin, "approvals-02-the-queue")
    assert "Approvals (2 waiting)" in menu
    assert listed == ["waiting", "waiting", "expired"]

    # The link the caller was given, opened by an admin who is not signed in yet.
    reviewer = chromium.new_page(base)

    def follow_the_link() -> dict[str, str]:
        reviewer.goto(page_path(approve_me))
        reviewer.wait_for_selector("#id_username")
        reviewer.fill("#id_username", "ada")
        reviewer.fill("#id_password", ADMIN_PASSWORD)
        reviewer.click("input[type=submit]")
        reviewer.wait_for_selector("#approval-call")
        return {
            "url": reviewer.url,
            "arguments": reviewer.inner_text("#approval-arguments"),
            "tool": reviewer.inner_text("#approval-tool"),
            "reason": reviewer.inner_text("#approval-reason"),
            "status": reviewer.inner_text("#approval-status"),
        }

    seen = chromium.run(follow_the_link)
    chromium.shot(reviewer, "approvals-03-the-approval-page")
    assert seen["url"] == base + page_path(approve_me)
    assert seen["arguments"] == MASKED
    assert seen["tool"] == "delete_file in server filesystem (toolbox dev)"
    assert seen["reason"] == "approval required by: toolbox 'dev', tool 'delete_file', everyone"
    assert seen["status"].startswith("waiting:") and " left (until " in seen["status"]

    def decide(approval: Approval, button: str) -> str:
        reviewer.goto(page_path(approval))
        reviewer.click(button)
        reviewer.wait_for_selector(".messagelist")
        assert reviewer.query_selector("#approve") is None
        return reviewer.inner_text("#approval-status")

    approved = chromium.run(decide, approve_me, "#approve")
    chromium.shot(reviewer, "approvals-04-approved")
    assert approved.startswith("approved by ada, ") and approved.endswith("from 127.0.0.1")
    refused = chromium.run(decide, refuse_me, "#refuse")
    assert refused.startswith("refused by ada, ")
    approve_me.refresh_from_db()
    refuse_me.refresh_from_db()
    assert (approve_me.status, refuse_me.status) == (approvals.APPROVED, approvals.REFUSED)
    assert approve_me.decided_from == "127.0.0.1"

    def look(approval: Approval) -> tuple[str, bool]:
        reviewer.goto(page_path(approval))
        reviewer.wait_for_selector("#approval-status")
        return reviewer.inner_text("#approval-status"), reviewer.query_selector("#approve") is None

    status, no_buttons = chromium.run(look, expired)
    chromium.shot(reviewer, "approvals-05-expired")
    assert status.startswith("expired") and no_buttons

    def history() -> str:
        reviewer.goto(f"/admin/calls/approval/{approve_me.pk}/history/")
        return reviewer.inner_text("#change-history")

    assert (
        "Approved delete_file (server 'filesystem', toolbox 'dev') for OAuth: cal from 127.0.0.1"
    ) in chromium.run(history)

    # The caller, signed in, cannot approve their own call alone.
    own = held(acme, "delete_file")
    caller = chromium.new_page(base)

    def own_call() -> tuple[str, bool]:
        login(caller, "cal", CALLER_PASSWORD)
        caller.goto(page_path(own))
        caller.wait_for_selector("#refusal")
        return caller.inner_text("#refusal"), caller.query_selector("#approve") is None

    refusal, no_buttons = chromium.run(own_call)
    chromium.shot(caller, "approvals-06-the-callers-own-call")
    assert refusal == approvals.OWN_CALL and no_buttons
    own.refresh_from_db()
    assert own.status == approvals.PENDING
