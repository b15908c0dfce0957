"""`records.write_passage`, the door that lets a held call through (issue 36): an approved
call's approval is used once; a pending one holds it; a refusal or an expiry is told once;
else a new approval is asked, with the terms and a caller's label that holds no secret;
the snapshot carries an "ask" rule's terms, its approvers read with the rules."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Membership
from calls.approvals import decide
from calls.models import Approval
from kernel import approvals
from kernel.approvals import ApprovalTerms, arguments_digest
from mcp_gateway.database.reads import load_tenant
from mcp_gateway.database.records import write_passage
from mcp_gateway.snapshots.approvals import DENIED, HELD, RUN, HeldCall, Passage
from toolboxes.models import ApiKey, Tenant, Toolbox, ToolPolicy

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> tuple[Tenant, ApiKey, object]:
    tenant = Tenant.objects.create(slug="acme")
    api_key, _ = ApiKey.issue(tenant, label="ci")
    boss = get_user_model().objects.create_user("boss")
    Membership.objects.create(user=boss, tenant=tenant, role="admin")
    return tenant, api_key, boss


def held(tenant: Tenant, api_key: ApiKey, **changes: object) -> HeldCall:
    call = HeldCall(
        tenant_id=tenant.pk,
        caller=f"key:{api_key.pk}",
        key_id=api_key.pk,
        person_id=None,
        toolbox="dev",
        server="filesystem",
        tool="delete_file",
        digest=arguments_digest({"path": "/tmp/x"}),
        shown='{"path": "/tmp/x"}',
        reason="approval required by: tool 'delete_file', everyone",
        terms=ApprovalTerms(minutes=5),
    )
    return replace(call, **changes)


def test_asked_held_used_once_and_asked_anew(world):
    tenant, api_key, boss = world
    call = held(tenant, api_key)
    asked = write_passage(call)
    assert asked.verdict == HELD
    approval = Approval.objects.get(public_id=asked.public_id)
    assert (approval.caller_label, approval.arguments_shown, approval.status) == (
        str(api_key),
        '{"path": "/tmp/x"}',
        approvals.PENDING,
    )
    assert approval.expires_at - approval.created_at == timedelta(minutes=5)
    assert write_passage(call) == asked  # still waiting: the same approval
    assert decide(approval.pk, boss, True, "127.0.0.1").refused_because is None
    assert write_passage(call).verdict == RUN
    assert Approval.objects.get(pk=approval.pk).status == approvals.USED
    again = write_passage(call)
    assert again.verdict == HELD and again.public_id != asked.public_id


def test_an_approval_past_its_time_does_not_run_and_a_pending_one_expires(world):
    tenant, api_key, boss = world
    call = held(tenant, api_key)
    first = Approval.objects.get(public_id=write_passage(call).public_id)
    decide(first.pk, boss, True, "127.0.0.1")
    Approval.objects.filter(pk=first.pk).update(expires_at=timezone.now())
    second = write_passage(call)  # the approved one is stale: asked anew
    assert second.verdict == HELD and second.public_id != first.public_id
    Approval.objects.filter(public_id=second.public_id).update(expires_at=timezone.now())
    told = write_passage(call)
    assert (told.verdict, told.public_id, told.who) == (DENIED, second.public_id, "")
    assert write_passage(call).verdict == HELD  # told once


def test_a_refusal_is_told_once_naming_who_refused(world):
    tenant, api_key, boss = world
    call = held(tenant, api_key)
    approval = Approval.objects.get(public_id=write_passage(call).public_id)
    decide(approval.pk, boss, False, "127.0.0.1")
    told = write_passage(call)
    assert (told.verdict, told.public_id, told.who) == (DENIED, approval.public_id, "boss")
    assert Approval.objects.get(pk=approval.pk).told
    assert write_passage(call).verdict == HELD


def test_an_approval_is_for_its_caller_tool_and_arguments(world):
    tenant, api_key, boss = world
    call = held(tenant, api_key)
    approval = Approval.objects.get(public_id=write_passage(call).public_id)
    decide(approval.pk, boss, True, "127.0.0.1")
    other_key, _ = ApiKey.issue(tenant, label="other")
    for changed in (
        held(tenant, other_key, caller=f"key:{other_key.pk}"),
        held(tenant, api_key, digest=arguments_digest({"path": "/etc"})),
        held(tenant, api_key, tool="delete_all"),
        held(tenant, api_key, server="git"),
        held(tenant, api_key, toolbox="prod"),
    ):
        assert write_passage(changed).verdict == HELD
    assert Approval.objects.get(pk=approval.pk).status == approvals.APPROVED
    assert write_passage(call).verdict == RUN


def test_the_terms_and_the_callers_label(world):
    tenant, api_key, boss = world
    ada = get_user_model().objects.create_user("ada")
    gone = get_user_model().objects.create_user("gone")
    terms = ApprovalTerms(minutes=2, self_approval=True, approvers=frozenset({boss.pk, gone.pk}))
    gone_pk = gone.pk
    gone.delete()  # a named approver removed since the snapshot was read
    personal, _ = ApiKey.issue(tenant, label="mine", owner=ada)
    by_key = held(tenant, personal, caller=f"key:{personal.pk}", person_id=ada.pk, terms=terms)
    approval = Approval.objects.get(public_id=write_passage(by_key).public_id)
    assert (approval.caller_label, approval.caller_person_id, approval.key_id) == (
        f"{personal}, ada's",
        ada.pk,
        personal.pk,
    )
    assert approval.self_approval
    assert list(approval.approvers.values_list("pk", flat=True)) == [boss.pk]
    assert gone_pk not in approval.approvers.values_list("pk", flat=True)
    signed_in = held(tenant, api_key, caller="grant:3", key_id=None, person_id=ada.pk)
    approval = Approval.objects.get(public_id=write_passage(signed_in).public_id)
    assert (approval.caller_label, approval.key_id) == ("ada (signed in)", None)


def test_the_snapshot_carries_the_ask_rules_terms_read_with_the_rules(world):
    tenant, _, boss = world
    toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev")
    for tool in ("a", "b", "c"):
        rule = ToolPolicy.objects.create(
            tenant=tenant, toolbox=toolbox, tool=tool, effect="ask", approval_minutes=7
        )
        rule.approvers.set([boss])
    with CaptureQueriesContext(connection) as read:
        snapshot = load_tenant(tenant.pk, 1)
    assert snapshot is not None
    terms = {rule.tool: rule.terms for rule in snapshot.policy.rules}
    assert terms == dict.fromkeys("abc", ApprovalTerms(7, False, frozenset({boss.pk})))
    approver_reads = [q for q in read.captured_queries if "approvers" in q["sql"]]
    assert len(approver_reads) == 1  # one query for every rule's approvers


POSTGRESQL_ONLY = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="racing writers: PostgreSQL's row locks"
)


def racing(call: HeldCall) -> list[Passage]:
    """Two processes' passages of `call` at once (two threads, a connection each)."""
    start = threading.Barrier(2, timeout=30)
    passages: list[Passage] = []

    def race() -> None:
        start.wait()
        try:
            passages.append(write_passage(call))
        finally:
            connections.close_all()

    racers = [threading.Thread(target=race) for _ in range(2)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=60)
    return passages


@pytest.mark.django_db(transaction=True)
@POSTGRESQL_ONLY
def test_two_passages_racing_for_one_approval_run_once(world):
    """The approval's row lock and its conditional update let exactly one run."""
    tenant, api_key, boss = world
    call = held(tenant, api_key)
    approval = Approval.objects.get(public_id=write_passage(call).public_id)
    decide(approval.pk, boss, True, "127.0.0.1")
    assert sorted(passage.verdict for passage in racing(call)) == [HELD, RUN]
    assert Approval.objects.get(pk=approval.pk).status == approvals.USED


@pytest.mark.django_db(transaction=True)
@POSTGRESQL_ONLY
def test_two_retries_racing_for_one_run_continue_it_once(world):
    tenant, api_key, boss = world
    call = held(tenant, api_key)
    approval = Approval.objects.get(public_id=write_passage(call).public_id)
    decide(approval.pk, boss, True, "127.0.0.1")
    run = write_passage(call).run
    passages = racing(replace(call, retry=run))
    assert sorted(passage.verdict for passage in passages) == [HELD, RUN]
    assert [passage.retried for passage in passages if passage.verdict == RUN] == [True]


def test_the_retry_of_an_approved_run_is_let_through_once(world):
    """A run that asked for input (2026-07-28) names itself in the sealed state; its retry
    with those arguments runs once: the same state replayed, or brought with other
    arguments, is asked anew."""
    tenant, api_key, boss = world
    call = held(tenant, api_key)
    approval = Approval.objects.get(public_id=write_passage(call).public_id)
    decide(approval.pk, boss, True, "127.0.0.1")
    first = write_passage(call)
    assert (first.verdict, first.retried) == (RUN, False)
    assert first.run.startswith(f"{approval.public_id} ")
    changed = replace(call, digest=arguments_digest({"path": "/etc"}), retry=first.run)
    assert write_passage(changed).verdict == HELD
    retried = write_passage(replace(call, retry=first.run))
    assert (retried.verdict, retried.retried, retried.who) == (RUN, True, "boss")
    assert retried.public_id == approval.public_id and retried.run != first.run
    replayed = write_passage(replace(call, retry=first.run))
    assert replayed.verdict == HELD and replayed.public_id != approval.public_id
    again = write_passage(replace(call, retry=retried.run))  # the next round's state
    assert (again.verdict, again.retried) == (RUN, True)
    assert write_passage(replace(call, retry="not a run")).verdict == HELD
    assert Approval.objects.get(pk=approval.pk).status == approvals.USED
