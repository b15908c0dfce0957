"""What the gateway writes into the admins' world: how each new connection went (its
server's status and, for pinning, what it offers), an admin's check of the same, a key's
last use, and the call log's batches. Each runs in the ORM's thread (`threads.in_thread`)
or, for the call log, in its writer's thread."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from calls.writer import save_batch
from connections import store as sign_ins
from kernel.pins import OFF
from mcp_gateway.database.threads import in_thread
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
    if ok and pinning != OFF:
        server = Server.objects.select_related("toolbox").filter(pk=server_id).first()
        if server is not None:
            tool_pins.record_offer(server, fingerprint, definitions)


# A gateway's new connection, in one trip to the ORM's thread.
record_connection = in_thread(write_connection)


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
