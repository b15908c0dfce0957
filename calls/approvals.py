"""Deciding a held call (issue 36): a person approves or refuses it, or its time runs out.

The approval page and the admin's queue decide through `decide`, under the rules of
`kernel.approvals` (who may), with the row locked so that two people deciding at once, or
a decision racing the call's own expiry, leave one answer. Each decision is written to the
approval's admin history (Django's LogEntry: who, what, when, from where), the audit trail
the queue shows. The gateway creates, finds and uses approvals through its database door.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from calls.models import Approval
from kernel import approvals, roles


@dataclass(frozen=True, slots=True)
class Decided:
    """What `decide` did: `refused_because` is the text shown when the person may not
    decide (or the approval is no longer pending); None: `approval` holds the decision."""

    approval: Approval
    refused_because: str | None = None


def refusal_for(approval: Approval, user: AbstractBaseUser) -> str | None:
    """Why `user` may not decide `approval` (None: they may)."""
    named = list(approval.approvers.all())
    return approvals.refusal_to_decide(
        user_id=user.pk,
        caller_person=approval.caller_person_id,
        self_approval=approval.self_approval,
        approvers=frozenset(person.pk for person in named),
        is_tenant_admin=roles.can_manage(user, approval.tenant_id),
        named=[person.get_username() for person in named],
    )


def expire_if_due(approval: Approval) -> bool:
    """Mark a pending approval past its time expired (True if it is now expired)."""
    if approval.status == approvals.PENDING and approval.expires_at <= timezone.now():
        approval.status = approvals.EXPIRED
        approval.save(update_fields=["status"])
    return approval.status == approvals.EXPIRED


def decide(approval_id: int, user: AbstractBaseUser, approve: bool, address: str) -> Decided:
    """Approve or refuse a pending call as `user`, from `address` (the audit trail's)."""
    with transaction.atomic():
        approval = Approval.objects.select_for_update().get(pk=approval_id)
        refusal = refusal_for(approval, user)
        if refusal is not None:
            return Decided(approval, refusal)
        if expire_if_due(approval):
            return Decided(approval, approvals.TIMED_OUT)
        if approval.status != approvals.PENDING:
            status = approval.get_status_display()
            return Decided(approval, approvals.ALREADY.format(status=status))
        approval.status = approvals.APPROVED if approve else approvals.REFUSED
        approval.decided_by = user
        approval.decided_at = timezone.now()
        approval.decided_from = address[:100]
        approval.save(update_fields=["status", "decided_by", "decided_at", "decided_from"])
        LogEntry.objects.log_actions(
            user.pk, [approval], CHANGE, audit_text(approval), single_object=True
        )
    return Decided(approval)


AUDIT = "{verb} {tool} (server '{server}', toolbox '{toolbox}') for {caller} from {address}"


def audit_text(approval: Approval) -> str:
    """The history line of a decision: what was decided, for whom, from where (the time
    and the person are the entry's own)."""
    return AUDIT.format(
        verb="Approved" if approval.status == approvals.APPROVED else "Refused",
        tool=approval.tool,
        server=approval.server,
        toolbox=approval.toolbox,
        caller=approval.caller_label,
        address=approval.decided_from or "an unknown address",
    )


def expire_due() -> int:
    """Mark every pending approval past its time expired (the queue's list and count read
    the state as it is now); how many."""
    return Approval.objects.filter(status=approvals.PENDING, expires_at__lte=timezone.now()).update(
        status=approvals.EXPIRED
    )


def waiting() -> QuerySet[Approval]:
    """The approvals a person may still decide."""
    return Approval.objects.filter(status=approvals.PENDING, expires_at__gt=timezone.now())
