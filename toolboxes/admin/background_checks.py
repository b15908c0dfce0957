"""Server checks in the background: saving a server, "Check now" and the list action start
one and answer at once; the page says "checking…" and asks `status/` until it ends.

Where a check runs: `CHECK_THREADS` daemon threads of the admin's own process, fed by a
queue of at most `MAX_WAITING` servers. Not on the request's thread: under ASGI Django runs
every sync view of a process on one thread, so a 7-9 s check (a cold `npx` server) stalled
every admin page of that process. Not on the event loop: a check records its result with
the ORM. Not in a separate worker service: one more process to run for a few checks an hour.
Daemon threads: a shutdown does not wait for a check (its server keeps its last status).

Bounds: one check per server at a time, across processes (an `add` to the shared store,
which expires after the gateway's connect timeout and `MARGIN_SECONDS`, so that a process
that died mid-check leaves no server "checking" for ever); `CHECK_THREADS` at once per
process; each check bounded by the gateway's connect timeout (its connection's deadline).

What a check found beyond the server's status (the reason's incident, the stderr tail:
redacted, and for admins only) waits in the shared store, encrypted, for
`RESULT_SECONDS`, for the check page whichever process serves it.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connections, transaction

from kernel import crypto
from kernel.store_names import installation_prefix
from toolboxes.gateway_questions import CheckResult, check_servers
from toolboxes.installation import installation_id
from toolboxes.models import Server

logger = logging.getLogger(__name__)

CHECK_THREADS = 2  # checks at once in one admin process
MAX_WAITING = 50  # servers waiting for a thread; more are refused (said on the page)
MARGIN_SECONDS = 30  # beyond the connect timeout: starting, stopping, recording
RESULT_SECONDS = 600  # how long a check's incident and stderr tail stay for its page

_waiting: queue.Queue[int] = queue.Queue(MAX_WAITING)
_started_threads: list[threading.Thread] = []
_start_lock = threading.Lock()
_idle = threading.Condition()
_unfinished = 0  # queued or running in this process (for `wait_idle`)


def _key(server_id: int, what: str) -> str:
    return f"{installation_prefix(installation_id())}:server-check:{server_id}:{what}"


def deadline_seconds() -> int:
    """How long a check may take before its server stops showing "checking…"."""
    return int(settings.WORKBENCH_CONNECT_TIMEOUT_SECONDS) + MARGIN_SECONDS


def checking_since(server_ids: Iterable[int]) -> dict[int, float]:
    """The servers among `server_ids` being checked, with when each check was asked for."""
    ids = list(server_ids)
    found = cache.get_many([_key(server_id, "running") for server_id in ids])
    since = {server_id: found.get(_key(server_id, "running")) for server_id in ids}
    return {server_id: float(at) for server_id, at in since.items() if at is not None}


def start(server_ids: Iterable[int], changed: bool = False) -> tuple[list[int], list[int]]:
    """Queue a check of each server: (queued, refused because the queue is full). A server
    being checked already is in neither: its check goes on, and when `changed` (it was
    saved since that check read it) another follows it."""
    queued, refused = [], []
    for server_id in server_ids:
        running = _key(server_id, "running")
        if not cache.add(running, time.time(), timeout=deadline_seconds()):
            if not changed:
                continue
            cache.set(_key(server_id, "again"), 1, timeout=deadline_seconds())
            if not cache.add(running, time.time(), timeout=deadline_seconds()):
                continue  # the check that runs will start the next one
            cache.delete(_key(server_id, "again"))
        try:
            _note_unfinished(+1)
            _waiting.put_nowait(server_id)
        except queue.Full:
            _note_unfinished(-1)
            cache.delete(running)
            refused.append(server_id)
            continue
        queued.append(server_id)
    if queued:
        _ensure_threads()
    return queued, refused


def start_after_commit(server_ids: Iterable[int]) -> None:
    """Check saved servers once their rows are committed (a check reads them afresh)."""
    ids = list(server_ids)
    if ids:
        transaction.on_commit(lambda: start(ids, changed=True))


def last_result(server: Server) -> CheckResult | None:
    """The background check that left `server`'s current status, if its outcome is still
    kept (None when the gateway's own connect or an older check left it)."""
    token = cache.get(_key(server.pk, "result"))
    if not isinstance(token, str) or server.last_check_at is None:
        return None
    try:
        held = json.loads(crypto.decrypt(token))
    except (crypto.SecretDecryptionError, ValueError):
        return None
    if held.pop("checked_at", None) != server.last_check_at.isoformat():
        return None
    if held.get("ok"):
        held["tools"] = list(server.last_check_tools or [])
    held["stderr_tail"] = tuple(held.get("stderr_tail") or ())
    return CheckResult(**held)


def wait_idle(timeout: float) -> bool:
    """Whether every check this process queued ended within `timeout` (tests; shutdown)."""
    with _idle:
        return _idle.wait_for(lambda: _unfinished == 0, timeout)


def _note_unfinished(change: int) -> None:
    global _unfinished
    with _idle:
        _unfinished += change
        _idle.notify_all()


def _ensure_threads() -> None:
    with _start_lock:
        _started_threads[:] = [thread for thread in _started_threads if thread.is_alive()]
        for number in range(len(_started_threads), CHECK_THREADS):
            thread = threading.Thread(target=_work, name=f"server-check-{number}", daemon=True)
            thread.start()
            _started_threads.append(thread)


def _work() -> None:
    while True:
        server_id = _waiting.get()
        try:
            _check(server_id)
        except Exception as exc:  # a thread that dies checks nothing more
            # The type only: an exception's text may quote a server's configuration.
            logger.error("The check of server %s failed: %s", server_id, type(exc).__name__)
        finally:
            cache.delete(_key(server_id, "running"))
            if cache.get(_key(server_id, "again")) is not None:  # saved while it ran
                cache.delete(_key(server_id, "again"))
                start([server_id])
            connections.close_all()  # this thread's own (Django's are per thread)
            _note_unfinished(-1)


def _check(server_id: int) -> None:
    close_old_connections()
    server = Server.objects.select_related("toolbox__tenant").filter(pk=server_id).first()
    if server is None:  # deleted while it waited
        return
    [result] = check_servers([server])
    server.refresh_from_db(fields=["last_check_at"])
    if server.last_check_at is None:
        return
    kept: dict[str, Any] = {**asdict(result), "tools": []}
    kept["checked_at"] = server.last_check_at.isoformat()
    cache.set(_key(server_id, "result"), crypto.encrypt(json.dumps(kept)), RESULT_SECONDS)
