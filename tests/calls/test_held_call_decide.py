"""`calls.approvals.decide` on the held calls the gateway asks (issue 36): the caller in
person decides their own call only where the rule allows self-approval; a tenant admin or
a named approver decides others'; anyone else is told who may; a decided or expired call
is not decided again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.models import Membership
from calls.approvals import decide
from calls.models import Approval
from kernel import approvals
from toolboxes.models import Tenant

pytestmark = pytest.mark.django_db


def member(tenant: Tenant, name: str, role: str) -> object:
    user = get_user_model().objects.create_user(name)
    Membership.objects.create(user=user, tenant=tenant, role=role)
    return user


@pytest.fixture
def people() -> dict[str, object]:
    tenant = Tenant.objects.create(slug="acme")
    return {
        "tenant": tenant,
        "ada": member(tenant, "ada", "admin"),  # the caller in person
        "boss": member(tenant, "boss", "admin"),
        "vic": member(tenant, "vic", "viewer"),
        "nina": member(tenant, "nina", "viewer"),  # a named approver
    }


def held(people: dict[str, object], self_approval: bool = False) -> Approval:
    approval = Approval.objects.create(
        tenant=people["tenant"],
        caller="key:1",
        caller_label="wb_ab12cd34_… (ci), ada's",
        caller_person=people["ada"],
        toolbox="dev",
        server="filesystem",
        tool="delete_file",
        arguments_digest=approvals.arguments_digest({}),
        reason="approval required by: tool 'delete_file', everyone",
        self_approval=self_approval,
        expires_at=timezone.now() + timedelta(minutes=10),
    )
    approval.approvers.set([people["nina"]])
    return approval


def test_the_caller_may_not_approve_their_own_call_unless_the_rule_allows(people):
    approval = held(people)
    assert decide(approval.pk, people["ada"], True, "x").refused_because == approvals.OWN_CALL
    assert Approval.objects.get(pk=approval.pk).status == approvals.PENDING
    allowed = held(people, self_approval=True)
    assert decide(allowed.pk, people["ada"], True, "x").refused_because is None
    assert Approval.objects.get(pk=allowed.pk).status == approvals.APPROVED


@pytest.mark.parametrize("who", ["boss", "nina"])
def test_an_admin_or_a_named_approver_decides(people, who):
    approval = held(people)
    done = decide(approval.pk, people[who], False, "10.0.0.1")
    assert done.refused_because is None
    row = Approval.objects.get(pk=approval.pk)
    assert (row.status, row.decided_by_id, row.decided_from) == (
        approvals.REFUSED,
        people[who].pk,
        "10.0.0.1",
    )
    again = decide(approval.pk, people["boss"], True, "x")
    assert again.refused_because == approvals.ALREADY.format(status="refused")


def test_anyone_else_is_told_who_may(people):
    approval = held(people)
    refused = decide(approval.pk, people["vic"], True, "x").refused_because
    assert (
        refused == "You may not decide this call: its approvers are the tenant's admins and nina."
    )


def test_an_expired_call_is_not_decided(people):
    approval = held(people)
    Approval.objects.filter(pk=approval.pk).update(expires_at=timezone.now())
    assert decide(approval.pk, people["boss"], True, "x").refused_because == approvals.TIMED_OUT
    assert Approval.objects.get(pk=approval.pk).status == approvals.EXPIRED
