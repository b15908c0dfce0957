"""Calls a tool policy holds for a person's approval (issue 36), as `use_tool` and the
toolbox endpoint pass them: the call is bound to its caller, its tool and the digest of its
exact arguments (`kernel.approvals`), and the database door (`records.pass_approval`)
answers in one transaction whether an approval lets it run once, still waits, was refused
or expired, or is asked now. The caller is given the approval page's link."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kernel.approvals import PAGE_PATH, arguments_digest
from kernel.redaction import Redactor
from kernel.tool_policy import Decision
from mcp_gateway.metatools import errors, secret_guard
from mcp_gateway.snapshots.approvals import DENIED, RUN, HeldCall, Passage
from mcp_gateway.snapshots.callers import Caller

# The database door's answer to a held call (`database.records.pass_approval`).
ApprovalDoor = Callable[[HeldCall], Awaitable[Passage]]

SHOWN_CHARS = 4000  # how much of a held call's arguments its approvers see
RETRIED = "approved: the retry of an approved call"
NO_DOOR = "not approved: this gateway keeps no approvals"


def shown(arguments: Mapping[str, Any] | None, redactors: tuple[Redactor, ...]) -> str:
    """The arguments as approvers see them: JSON, the server's secret values and every
    credential the secrets guard knows masked, capped."""
    text = json.dumps(dict(arguments or {}), ensure_ascii=False, sort_keys=True, default=str)
    text = secret_guard.masked(text, redactors)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def approval_url(caller: Caller, public_id: str) -> str:
    """The approval page, where Workbench is as the caller reached it."""
    return caller.base_url.rstrip("/") + PAGE_PATH.format(public_id=public_id)


async def pass_held(
    door: ApprovalDoor | None,
    caller: Caller,
    where: tuple[str, str, str],
    arguments: Mapping[str, Any] | None,
    decision: Decision,
    redactors: tuple[Redactor, ...] = (),
    retry: str = "",
) -> tuple[str, str]:
    """Let a call that `decision` asks approval of through once a person approved it (and
    `retry`, the run a sealed input-required state names, once): the call log's decision
    ("approved by alice") and the run, which an input-required result's state carries;
    else `APPROVAL_REQUIRED` (the link) or `APPROVAL_DENIED` (refused, or expired: told
    once). `where`: toolbox, server, tool."""
    toolbox, server, tool = where
    if door is None:
        raise errors.approval_denied(tool, server, toolbox, NO_DOOR)
    held = HeldCall(
        tenant_id=caller.tenant.tenant_id,
        caller=caller.owner,
        key_id=caller.key.key_id if caller.grant_id is None else None,
        person_id=caller.person_id,
        toolbox=toolbox,
        server=server,
        tool=tool,
        digest=arguments_digest(arguments),
        shown=shown(arguments, redactors),
        reason=decision.reason,
        terms=decision.terms,
        retry=retry,
    )
    passage = await door(held)
    if passage.verdict == RUN:
        return (RETRIED if passage.retried else f"approved by {passage.who}"), passage.run
    if passage.verdict == DENIED:
        why = f"refused by {passage.who}" if passage.who else "expired"
        raise errors.approval_denied(tool, server, toolbox, f"not approved: {why}")
    url = approval_url(caller, passage.public_id)
    raise errors.approval_required(tool, server, toolbox, url, decision.reason)
