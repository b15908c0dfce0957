"""The approval page and the admin's queue of held calls (issue 36): who sees a call, who
may decide it (the exact texts of `kernel.approvals`), every decision in the approval's
admin history with who, what and from where, expired and decided calls shown as such."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from accounts.models import Membership
from calls.models import Approval
from kernel import approvals
from toolboxes.models import Tenant

PASSWORD = "pw-approvals-123"
QUEUE = "/admin/calls/approval/"
ARGUMENTS = '{"path": "/srv/prod.db", "token": "••••••"}'


def held(tenant: Tenant, caller: User | None = None, **fields: Any) -> Approval:
    """A held call as the gateway writes it."""
    return Approval.objects.create(
        tenant=tenant,
        caller=f"grant:{caller.pk}" if caller else "key:1",
        caller_label=f"OAuth: {caller.username}" if caller else "wb_ab12cd34 (ci)",
        caller_person=caller,
        toolbox="dev",
        server="filesystem",
        tool=fields.pop("tool", "delete_file"),
        arguments_digest=approvals.arguments_digest({"path": "/srv/prod.db"}),
        arguments_shown=ARGUMENTS,
        reason="approval required by: toolbox 'dev', tool 'delete_file', everyone",
        expires_at=fields.pop("expires_at", timezone.now() + timedelta(minutes=10)),
        **fields,
    )


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    acme = Tenant.objects.create(slug="acme", name="Acme")
    other = Tenant.objects.create(slug="other", name="Other")
    people = {}
    for name, tenant, role in (
        ("ada", acme, "admin"),
        ("cal", acme, "viewer"),
        ("vic", acme, "viewer"),
        ("bob", acme, "viewer"),
        ("oz", other, "admin"),
    ):
        people[name] = User.objects.create_user(name, password=PASSWORD, is_staff=True)
        Membership.objects.create(user=people[name], tenant=tenant, role=role)
    return {"acme": acme, "other": other, **people}


def page_of(approval: Approval) -> str:
    return approvals.PAGE_PATH.format(public_id=approval.public_id)


def test_an_unsigned_visitor_signs_in_and_comes_back(world: dict[str, Any]) -> None:
    path = page_of(held(world["acme"]))
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/admin/login/?next={path}"


def test_an_unknown_approval_is_404(world: dict[str, Any]) -> None:
    response = signed_in(world["ada"]).get("/approvals/no-such-id/")
    assert response.status_code == 404


def test_an_admin_sees_the_call_and_approves_it_into_the_history(world: dict[str, Any]) -> None:
    approval = held(world["acme"], world["cal"])
    client = signed_in(world["ada"])
    shown = client.get(page_of(approval))
    assert shown.status_code == 200
    body = shown.content.decode()
    for text in (
        "Acme",
        "OAuth: cal",
        "delete_file",
        "filesystem",
        "/srv/prod.db",
        "••••••",
        "approval required by: toolbox &#x27;dev&#x27;, tool &#x27;delete_file&#x27;, everyone",
        'id="approve"',
        'id="refuse"',
    ):
        assert text in body
    assert " min " in body and " s</span> left" in body

    response = client.post(page_of(approval), {"decision": "approve"}, REMOTE_ADDR="192.0.2.7")
    assert response.status_code == 302 and response["Location"] == page_of(approval)
    approval.refresh_from_db()
    assert approval.status == approvals.APPROVED
    assert (approval.decided_by, approval.decided_from) == (world["ada"], "192.0.2.7")
    entry = LogEntry.objects.get(object_id=str(approval.pk))
    assert entry.user == world["ada"]
    assert entry.change_message == (
        "Approved delete_file (server 'filesystem', toolbox 'dev') for OAuth: cal from 192.0.2.7"
    )
    after = client.get(page_of(approval)).content.decode()
    assert "You approved this call: the caller may now call it again, once." in after
    assert 'id="approve"' not in after and "192.0.2.7" in after and "ada" in after


def test_a_refusal_is_recorded_and_a_second_decision_is_refused(world: dict[str, Any]) -> None:
    approval = held(world["acme"])
    client = signed_in(world["ada"])
    client.post(page_of(approval), {"decision": "refuse"})
    approval.refresh_from_db()
    assert approval.status == approvals.REFUSED
    assert LogEntry.objects.get(object_id=str(approval.pk)).change_message == (
        "Refused delete_file (server 'filesystem', toolbox 'dev') for wb_ab12cd34 (ci) "
        "from 127.0.0.1"
    )
    again = client.post(page_of(approval), {"decision": "approve"})
    assert again.status_code == 409
    assert "This call was already refused." in again.content.decode()


def test_the_caller_may_not_approve_their_own_call(world: dict[str, Any]) -> None:
    approval = held(world["acme"], world["cal"])
    client = signed_in(world["cal"])
    shown = client.get(page_of(approval))
    assert shown.status_code == 403
    body = shown.content.decode()
    assert approvals.OWN_CALL in body and "delete_file" in body and 'id="approve"' not in body
    posted = client.post(page_of(approval), {"decision": "approve"})
    assert posted.status_code == 403 and approvals.OWN_CALL in posted.content.decode()
    approval.refresh_from_db()
    assert approval.status == approvals.PENDING
    assert not LogEntry.objects.exists()


def test_the_caller_approves_their_own_call_where_the_rule_allows(world: dict[str, Any]) -> None:
    approval = held(world["acme"], world["cal"], self_approval=True)
    response = signed_in(world["cal"]).post(page_of(approval), {"decision": "approve"})
    assert response.status_code == 302
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by) == (approvals.APPROVED, world["cal"])


def test_a_viewer_may_not_decide_unless_named(world: dict[str, Any]) -> None:
    approval = held(world["acme"])
    approval.approvers.add(world["bob"])
    shown = signed_in(world["vic"]).get(page_of(approval))
    assert shown.status_code == 403
    assert (
        "You may not decide this call: its approvers are the tenant&#x27;s admins and bob."
        in shown.content.decode()
    )
    assert (
        signed_in(world["bob"]).post(page_of(approval), {"decision": "refuse"}).status_code == 302
    )
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by) == (approvals.REFUSED, world["bob"])


def test_another_tenants_admin_sees_nothing_of_the_call(world: dict[str, Any]) -> None:
    approval = held(world["acme"])
    response = signed_in(world["oz"]).get(page_of(approval))
    assert response.status_code == 403
    body = response.content.decode()
    assert "You may not decide this call: its approvers are the tenant&#x27;s admins." in body
    assert "delete_file" not in body and "/srv/prod.db" not in body


def test_an_expired_call_shows_expired_without_buttons(world: dict[str, Any]) -> None:
    approval = held(world["acme"], expires_at=timezone.now() - timedelta(seconds=1))
    client = signed_in(world["ada"])
    body = client.get(page_of(approval)).content.decode()
    assert "expired" in body and 'id="approve"' not in body
    approval.refresh_from_db()
    assert approval.status == approvals.EXPIRED
    posted = client.post(page_of(approval), {"decision": "approve"})
    assert posted.status_code == 409
    assert approvals.TIMED_OUT in posted.content.decode()


def test_a_decision_past_the_time_is_refused_as_timed_out(world: dict[str, Any]) -> None:
    approval = held(world["acme"], expires_at=timezone.now() - timedelta(seconds=1))
    posted = signed_in(world["ada"]).post(page_of(approval), {"decision": "approve"})
    assert posted.status_code == 409
    assert approvals.TIMED_OUT in posted.content.decode()


def test_a_decision_must_be_approve_or_refuse(world: dict[str, Any]) -> None:
    approval = held(world["acme"])
    response = signed_in(world["ada"]).post(page_of(approval), {"decision": "maybe"})
    assert response.status_code == 400
    assert "Choose Approve or Refuse." in response.content.decode()


def test_the_queue_lists_pending_first_and_counts_them(world: dict[str, Any]) -> None:
    decided = held(world["acme"], tool="drop_table", status=approvals.REFUSED)
    waiting = held(world["acme"], tool="delete_file")
    decided.created_at = waiting.created_at + timedelta(seconds=5)
    decided.save()
    held(world["acme"], tool="wipe", expires_at=timezone.now() - timedelta(seconds=1))
    held(world["other"], tool="other_tool")
    client = signed_in(world["vic"])
    body = client.get(QUEUE).content.decode()
    assert body.index("delete_file") < body.index("drop_table")
    assert "other_tool" not in body
    assert "approve_selected" not in body  # a viewer reads the queue
    assert Approval.objects.get(tool="wipe").status == approvals.EXPIRED
    assert "Approvals (1 waiting)" in client.get("/admin/").content.decode()
    assert (
        client.get(f"{QUEUE}{Approval.objects.get(tool='other_tool').pk}/change/").status_code
        == 404
    )


def test_an_admin_decides_from_the_queue(world: dict[str, Any]) -> None:
    mine = held(world["acme"], world["ada"])
    theirs = held(world["acme"], world["cal"])
    client = signed_in(world["ada"])
    response = client.post(
        QUEUE,
        {"action": "approve_selected", "_selected_action": [mine.pk, theirs.pk]},
        follow=True,
    )
    body = response.content.decode()
    assert "Approved 1 call." in body
    assert approvals.OWN_CALL in body
    theirs.refresh_from_db()
    mine.refresh_from_db()
    assert (theirs.status, mine.status) == (approvals.APPROVED, approvals.PENDING)
    history = client.get(f"{QUEUE}{theirs.pk}/history/").content.decode()
    assert (
        "Approved delete_file (server &#x27;filesystem&#x27;, toolbox &#x27;dev&#x27;)" in history
    )


def test_the_usage_page_counts_the_decisions(world: dict[str, Any]) -> None:
    from calls.models import CallRecord

    def logged(decision: str, outcome: str = "ok") -> None:
        CallRecord.objects.create(
            at=timezone.now(),
            tenant=world["acme"],
            meta_tool="use_tool",
            toolbox="dev",
            server="filesystem",
            tool="delete_file",
            duration_ms=1.0,
            outcome=outcome,
            decision=decision,
        )

    logged("allowed by: toolbox 'dev', role admin")
    logged("allowed by: toolbox 'dev', role admin")
    logged("denied by: toolbox 'dev', role viewer", "FORBIDDEN")
    logged("")  # no rule applied: not a decision of a rule
    for status in (approvals.APPROVED, approvals.USED, approvals.REFUSED, approvals.EXPIRED):
        held(world["acme"], status=status)
    held(world["acme"])
    held(world["acme"], expires_at=timezone.now() - timedelta(seconds=1))
    held(world["other"], status=approvals.REFUSED)
    page = signed_in(world["ada"]).get(f"/admin/calls/callrecord/usage/?tenant={world['acme'].pk}")
    text = " ".join(page.content.decode().split())
    assert (
        "Tool policies: <strong>2</strong> calls allowed by a rule, <strong>1</strong> denied, "
        "<strong>6</strong> asked for a person's approval (2 approved, 1 refused, "
        "2 expired, 1 waiting)."
    ) in text


def test_a_decision_needs_the_pages_csrf_token(world: dict[str, Any]) -> None:
    approval = held(world["acme"])
    client = Client(enforce_csrf_checks=True)
    client.force_login(world["ada"])
    assert client.post(page_of(approval), {"decision": "approve"}).status_code == 403
    approval.refresh_from_db()
    assert approval.status == approvals.PENDING
    token = client.get(page_of(approval)).context["csrf_token"]
    posted = client.post(page_of(approval), {"decision": "approve", "csrfmiddlewaretoken": token})
    assert posted.status_code == 302


def test_the_queues_object_page_is_read_only_and_links_the_approval_page(
    world: dict[str, Any],
) -> None:
    approval = held(world["acme"], world["cal"])
    approval.approvers.add(world["bob"])
    page = signed_in(world["ada"]).get(f"{QUEUE}{approval.pk}/change/").content.decode()
    assert f'href="{page_of(approval)}" id="approval-page-link">Approve or refuse' in page
    assert 'name="_save"' not in page and "bob" in page and "/srv/prod.db" in page
