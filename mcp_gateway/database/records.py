"""What the gateway writes into the admins' world: how each new connection went (its
server's status and, for pinning, what it offers), an admin's check of the same, a key's
last use, the call log's batches, and the approvals of held calls (`write_passage`). Each
runs in the ORM's thread (`threads.in_thread`) or, for the call log, in its writer's
thread."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from calls.models import Approval
from calls.writer import save_batch
from connections import store as sign_ins
from kernel import approvals
from kernel.pins import OFF
from mcp_gateway.database.threads import in_thread
from mcp_gateway.snapshots.approvals import DENIED, HELD, RUN, HeldCall, Passage
from toolboxes import installation, server_status
from toolboxes import pins as tool_pins
from toolboxes.models import ApiKey, Server


def write_connection(
    server_id: int,
    pinning: str,
    fingerprint: str,
    ok: bool,
    milliseconds: int,
    reason: str,
    definitions: list[dict[str, Any]],
    incident: str = "",
    cause: str = "",
    *,
    notes_checked: bool = False,
) -> None:
    """How a connection (or an admin's check) went: ok or the classified reason (with its
    incident and the admin's cause) and the tools offered, shown as the server's status;
    and the offer recorded for pinning (unless pinning is off). `notes_checked`: an ok
    `reason` is the check's notes (`server_status.save_result`)."""
    server_status.save_result(
        server_id,
        ok,
        milliseconds,
        reason,
        definitions,
        incident=incident,
        cause=cause,
        notes_checked=notes_checked,
    )
    if ok:
        _pin_offer(server_id, pinning, fingerprint, definitions)


# A gateway's new connection, in one trip to the ORM's thread.
record_connection = in_thread(write_connection)


def _pin_offer(
    server_id: int, pinning: str, fingerprint: str, definitions: list[dict[str, Any]]
) -> None:
    """An ok connection's offer recorded for pinning (unless pinning is off)."""
    if pinning == OFF:
        return
    server = Server.objects.select_related("toolbox").filter(pk=server_id).first()
    if server is not None:
        tool_pins.record_offer(server, fingerprint, definitions)


def write_set_offer(
    server_id: int,
    pinning: str,
    fingerprint: str,
    ok: bool,
    milliseconds: int,
    reason: str,
    definitions: list[dict[str, Any]],
    incident: str = "",
    cause: str = "",
) -> None:
    """What a server offers a client that declared capabilities (a connection for a
    declared set: `metatools.connect`), recorded for pinning only, so that a tool offered
    only to such a client waits for an admin as any new tool does, and can be approved;
    the server's status stays its base connection's (`write_connection`)."""
    if ok:
        _pin_offer(server_id, pinning, fingerprint, definitions)


# A gateway's new connection for a declared set, in one trip to the ORM's thread.
record_set_offer = in_thread(write_set_offer)


def record_check(
    server: Server,
    fingerprint: str,
    ok: bool,
    milliseconds: int,
    reason: str,
    definitions: list[dict[str, Any]],
    incident: str = "",
    cause: str = "",
    *,
    notes: str = "",
) -> None:
    """An admin's check, recorded as a connect is, with its notes on an ok server's lists
    (a connect does not look at them, and keeps the last check's)."""
    write_connection(
        server.pk,
        server.pinning,
        fingerprint,
        ok,
        milliseconds,
        notes if ok else reason,
        definitions,
        incident,
        cause,
        notes_checked=True,
    )


def _touch_key(key_id: int, when: float) -> None:
    ApiKey.objects.filter(pk=key_id).update(last_used_at=datetime.fromtimestamp(when, tz=UTC))


async def touch_key(key_id: int, when: float) -> None:
    await in_thread(_touch_key)(key_id, when)


def save_calls(entries: Sequence[Any]) -> None:
    """Write a batch of call log entries (`observe.calllog`), in the writer's thread."""
    save_batch(list(entries))


# A gateway's start: the store it uses, recorded for commands to check theirs against.
record_store = in_thread(installation.record_store)


class SignInRecords:
    """What the gateway writes of connected accounts: a refresh's claim (one process at a
    time) and its tokens, a refused sign-in, a person's one-time connect link."""

    claim_refresh = staticmethod(in_thread(sign_ins.claim_refresh))
    save_refreshed = staticmethod(in_thread(sign_ins.save_refreshed))
    release_claim = staticmethod(in_thread(sign_ins.release_claim))
    needs_reconnect = staticmethod(in_thread(sign_ins.needs_reconnect))
    new_link = staticmethod(in_thread(sign_ins.new_link))


def _who(user: Any) -> str:
    return user.get_username() if user is not None else "a removed user"


def _caller_label(held: HeldCall) -> str:
    """How approvers see the caller: the key's prefix and label, the member's username;
    never a secret."""
    people = get_user_model()._default_manager
    person = people.filter(pk=held.person_id).first() if held.person_id else None
    if held.key_id is None:
        return f"{_who(person)} (signed in)"
    key = ApiKey.objects.filter(pk=held.key_id).first()
    label = str(key) if key is not None else f"API key {held.key_id}"
    return f"{label}, {_who(person)}'s" if person is not None else label


def _run(public_id: str, at: datetime) -> str:
    """A run of an approved call: its approval and when it ran (`Approval.used_at`)."""
    return f"{public_id} {at.isoformat()}"


def _continued(same: Any, run: str, now: datetime) -> Passage | None:
    """The retry of an approved run that asked for input, let through once: the run's
    time moves on (a conditional update), so the state that named it names no run again."""
    public_id, _, at = run.partition(" ")
    try:
        ran_at = datetime.fromisoformat(at)
    except ValueError:
        return None
    ran = same.filter(public_id=public_id, status=approvals.USED, used_at=ran_at)
    found = ran.select_related("decided_by").first()
    if found is None or not ran.update(used_at=now):
        return None
    return Passage(RUN, public_id, _who(found.decided_by), run=_run(public_id, now), retried=True)


def write_passage(held: HeldCall) -> Passage:
    """Whether a call a policy asks approval of may run, in one transaction: an approved,
    unused, unexpired approval of this caller's exact call is used (once, even with two
    calls racing in two processes: the conditional update is the lock) and the call runs;
    so does the one retry of such a run that asked for input (`held.retry`); a pending one
    holds it again; a refusal or an expiry not yet told is told once; else a new approval
    is asked."""
    now = timezone.now()
    same = Approval.objects.filter(
        tenant_id=held.tenant_id,
        caller=held.caller,
        toolbox=held.toolbox,
        server=held.server,
        tool=held.tool,
        arguments_digest=held.digest,
    )
    with transaction.atomic():
        if held.retry and (retried := _continued(same, held.retry, now)) is not None:
            return retried
        same.filter(status=approvals.PENDING, expires_at__lte=now).update(status=approvals.EXPIRED)
        approved = same.filter(status=approvals.APPROVED, expires_at__gt=now)
        for found in (
            approved.select_for_update(of=("self",)).select_related("decided_by").order_by("pk")
        ):
            used = same.filter(pk=found.pk, status=approvals.APPROVED).update(
                status=approvals.USED, used_at=now
            )
            if used:
                run = _run(found.public_id, now)
                return Passage(RUN, found.public_id, _who(found.decided_by), run=run)
        pending = same.filter(status=approvals.PENDING).order_by("-pk").first()
        if pending is not None:
            return Passage(HELD, pending.public_id)
        ended = same.filter(status__in=(approvals.REFUSED, approvals.EXPIRED))
        last = ended.select_related("decided_by").order_by("-pk").first()
        if (
            last is not None
            and not last.told
            and same.filter(pk=last.pk, told=False).update(told=True)
        ):
            refused = last.status == approvals.REFUSED
            return Passage(DENIED, last.public_id, _who(last.decided_by) if refused else "")
        approval = Approval.objects.create(
            tenant_id=held.tenant_id,
            caller=held.caller,
            caller_label=_caller_label(held)[:200],
            caller_person_id=held.person_id,
            key_id=held.key_id,
            toolbox=held.toolbox,
            server=held.server,
            tool=held.tool,
            arguments_digest=held.digest,
            arguments_shown=held.shown,
            reason=held.reason[:200],
            self_approval=held.terms.self_approval,
            created_at=now,
            expires_at=now + timedelta(minutes=held.terms.minutes),
        )
        if held.terms.approvers:  # those still people (the snapshot may be older)
            people = get_user_model()._default_manager.filter(pk__in=held.terms.approvers)
            approval.approvers.set(people)
    return Passage(HELD, approval.public_id)


# A call a policy asks approval of (`metatools.approvals`), in one trip to the ORM's thread.
pass_approval = in_thread(write_passage)
