"""A call held for a person's approval, as the gateway asks its database door about it
(`database.records.pass_approval`), and the door's answer. Plain values; no Django."""

from __future__ import annotations

from dataclasses import dataclass

from kernel.approvals import ApprovalTerms

RUN = "run"  # an approval of this exact call was found and is now used: call the tool
HELD = "held"  # waiting for a person (an approval pending, or asked now)
DENIED = "denied"  # refused or expired, told the caller once


@dataclass(frozen=True, slots=True)
class HeldCall:
    """One call a policy asks a person's approval of: who calls (`caller`: the
    credential, `Caller.owner`), what (the tool and its arguments' digest), and, for a new
    approval, what approvers see and the rule's terms."""

    tenant_id: int
    caller: str
    key_id: int | None  # the API key that calls (None: an OAuth sign-in)
    person_id: int | None  # the member the call acts as (None: a tenant key)
    toolbox: str
    server: str
    tool: str
    digest: str  # kernel.approvals.arguments_digest
    shown: str  # the arguments as approvers see them: secrets masked, capped
    reason: str  # the rule or default that asked
    terms: ApprovalTerms
    # A 2026-07-28 retry of an approved call that asked for input: the run it continues
    # (`Passage.run`, brought back in the gateway's sealed state); empty: a new call.
    retry: str = ""


@dataclass(frozen=True, slots=True)
class Passage:
    """The door's answer: `verdict` RUN (`who`: the person who approved; `run`: this run,
    which one retry may continue; `retried`: this is that retry), HELD (`public_id`: the
    approval to link to) or DENIED (`who`: the person who refused; empty: the approval
    expired)."""

    verdict: str
    public_id: str = ""
    who: str = ""
    run: str = ""
    retried: bool = False
