"""Calls a person approves first (issue 36): the terms an "ask" rule sets, the digest that
binds an approval to a call's exact arguments, and who may decide an approval.

Plain values and no Django: the gateway binds and finds approvals with `arguments_digest`,
the approval page and the admin's queue ask `refusal_to_decide`, the rules carry
`ApprovalTerms`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_MINUTES = 10  # how long a held call waits for a person, unless the rule says
MAX_MINUTES = 24 * 60

# An approval's life: pending until a person decides or it expires; an approved call runs
# once (used).
PENDING = "pending"
APPROVED = "approved"
REFUSED = "refused"
EXPIRED = "expired"
USED = "used"
STATUSES = (PENDING, APPROVED, REFUSED, EXPIRED, USED)

# Where a person decides a held call (the link the caller is given; the page asks who is
# signed in). Served by `calls.views`, named "approval".
PAGE_PATH = "/approvals/{public_id}/"

# Why a signed-in person may not decide an approval (the page's and the queue's texts).
NOT_AN_APPROVER = "You may not decide this call: its approvers are {who}."
OWN_CALL = "This call is your own: another person must approve it (a second pair of eyes)."
ALREADY = "This call was already {status}."
TIMED_OUT = "This approval expired: the caller must call again."


@dataclass(frozen=True, slots=True)
class ApprovalTerms:
    """What an "ask" rule (or the tenant's default) says of its approvals. `approvers`:
    named people (user ids) who may approve besides the tenant's admins; `self_approval`:
    the caller, when a person, may approve their own call (otherwise never: a second pair
    of eyes)."""

    minutes: int = DEFAULT_MINUTES
    self_approval: bool = False
    approvers: frozenset[int] = frozenset()


DEFAULT_TERMS = ApprovalTerms()


def arguments_digest(arguments: Mapping[str, Any] | None) -> str:
    """The SHA-256 of a call's arguments in one canonical JSON form (keys sorted, no
    whitespace): an approval is for these exact arguments, a changed one needs another."""
    canonical = json.dumps(
        dict(arguments or {}), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def approvers_text(named: list[str]) -> str:
    """How `NOT_AN_APPROVER` names the approvers."""
    if not named:
        return "the tenant's admins"
    return "the tenant's admins and " + ", ".join(named)


def refusal_to_decide(
    *,
    user_id: int,
    caller_person: int | None,
    self_approval: bool,
    approvers: frozenset[int],
    is_tenant_admin: bool,
    named: list[str] | None = None,
) -> str | None:
    """Why `user_id` may not approve or refuse this call (None: they may). The caller in
    person decides only where self-approval is allowed; anyone else must be one of the
    tenant's admins (operators included) or a named approver."""
    if caller_person is not None and user_id == caller_person:
        return None if self_approval else OWN_CALL
    if is_tenant_admin or user_id in approvers:
        return None
    return NOT_AN_APPROVER.format(who=approvers_text(named or []))
