"""A secret handed to the admin who made it, once: a new API key, a new member's one-time
password.

The view that makes it holds it (`hold`) and redirects (a reload never makes a second);
the hand-off page takes it (`take`) as it shows it, so a reload or a second visit shows it
no more. Meanwhile it waits in the maker's session, encrypted (`kernel.crypto`), one
per kind, for `HANDOFF_SECONDS` at most. The page shows it in a read-only field with a
copy button (`admin/secret_once.html`, `admin_kit/copy.js`) and is never cached.
"""

from __future__ import annotations

from cryptography.fernet import InvalidToken
from django.http import HttpRequest

from kernel import crypto

SESSION_PREFIX = "_workbench_handoff_"
HANDOFF_SECONDS = 600  # a secret not picked up by its page within this is gone for good


def session_key(kind: str) -> str:
    return f"{SESSION_PREFIX}{kind}"


def hold(request: HttpRequest, kind: str, object_id: int, secret: str) -> None:
    """Keep `secret` of object `object_id` for its hand-off page only."""
    request.session[session_key(kind)] = {"id": object_id, "secret": crypto.encrypt(secret)}


def holds(request: HttpRequest, kind: str, object_id: int) -> bool:
    """Whether a secret of object `object_id` waits for its hand-off page."""
    held = request.session.get(session_key(kind))
    return isinstance(held, dict) and held.get("id") == object_id


def take(request: HttpRequest, kind: str, object_id: int) -> str | None:
    """The secret held for `object_id`, once: taken out of the session as it is read."""
    if not holds(request, kind, object_id):
        return None
    held = request.session.pop(session_key(kind))
    try:
        return crypto.fernet().decrypt(held["secret"].encode(), ttl=HANDOFF_SECONDS).decode()
    except (InvalidToken, KeyError, AttributeError):
        return None
