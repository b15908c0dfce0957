"""Connected accounts' rows, for the gateway's door (its `database` package) and the views:
plain values in, plain values out. Sync: call it off the event loop.

Every change a gateway must see at once (a sign-in made, removed, or needing a reconnect)
moves the tenant's configuration version (`toolboxes.versions`), as a key's revocation does.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from connections.models import (
    CONNECTED,
    NEEDS_RECONNECT,
    ConnectLink,
    PendingSignIn,
    Registration,
    SignIn,
)
from toolboxes import versions
from toolboxes.models import Server

LINK_SECONDS = 15 * 60  # how long a connect link may wait to be opened
FLOW_SECONDS = 15 * 60  # how long a person may take at the vendor's sign-in
REFRESH_CLAIM_SECONDS = 30.0  # a refresh's claim, should its process die meanwhile


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _bump(server_id: int) -> None:
    tenant_id = (
        Server.objects.filter(pk=server_id).values_list("toolbox__tenant_id", flat=True).first()
    )
    if tenant_id is not None:
        transaction.on_commit(lambda: versions.bump(tenant_id))


# --- the gateway's (through its database door) -----------------------------------------


def saved(server_id: int, user_id: int | None) -> tuple[int, int, str, dict[str, Any]] | None:
    """(row, version, status, tokens) of a server's sign-in for a person (None: shared)."""
    row = SignIn.objects.filter(server_id=server_id, user_id=user_id).first()
    if row is None:
        return None
    return row.pk, row.version, row.status, row.tokens


def claim_refresh(row_id: int, version: int) -> bool:
    """Whether this process may refresh the row's tokens: one claim at a time, on the
    version it read (another process that refreshed first moved it)."""
    now = time.time()
    return bool(
        SignIn.objects.filter(pk=row_id, version=version, status=CONNECTED)
        .filter(Q(refreshing_until__isnull=True) | Q(refreshing_until__lt=now))
        .update(refreshing_until=now + REFRESH_CLAIM_SECONDS)
    )


def save_refreshed(row_id: int, version: int, tokens: dict[str, Any]) -> bool:
    """The refreshed tokens, as the next version (the claim released)."""
    return bool(
        SignIn.objects.filter(pk=row_id, version=version).update(
            tokens=tokens, version=version + 1, refreshing_until=None, updated_at=timezone.now()
        )
    )


def release_claim(row_id: int, version: int) -> None:
    SignIn.objects.filter(pk=row_id, version=version).update(refreshing_until=None)


def needs_reconnect(row_id: int, version: int) -> None:
    """The vendor refused the tokens (a failed refresh, a 401): the person signs in again."""
    with transaction.atomic():
        changed = SignIn.objects.filter(pk=row_id, version=version).update(
            status=NEEDS_RECONNECT, version=version + 1, refreshing_until=None
        )
        if changed:
            server_id = SignIn.objects.filter(pk=row_id).values_list("server_id", flat=True)
            for found in server_id[:1]:
                _bump(found)


def new_link(user_id: int, server_id: int) -> str:
    """A one-time connect link's secret (its hash kept), bound to the person and server."""
    token = secrets.token_urlsafe(24)
    stale = time.time() - LINK_SECONDS  # links long expired go as new ones are made
    ConnectLink.objects.filter(expires_at__lt=stale).delete()
    ConnectLink.objects.create(
        token_hash=digest(token),
        user_id=user_id,
        server_id=server_id,
        expires_at=time.time() + LINK_SECONDS,
    )
    return token


# --- the views' ------------------------------------------------------------------------


def find_link(token: str) -> ConnectLink | None:
    """The link of this secret, unused and unexpired (not yet taken)."""
    return (
        ConnectLink.objects.filter(
            token_hash=digest(token), used_at__isnull=True, expires_at__gt=time.time()
        )
        .select_related("server__toolbox__tenant")
        .first()
    )


def take_link(link: ConnectLink) -> bool:
    """Use the link once (False: another request took it first)."""
    return bool(
        ConnectLink.objects.filter(pk=link.pk, used_at__isnull=True).update(used_at=timezone.now())
    )


def registrations(redirect_uri: str) -> dict[str, dict[str, Any]]:
    """The clients registered for this callback, by issuer."""
    rows = Registration.objects.filter(redirect_uri=redirect_uri)
    return {row.issuer: row.client for row in rows}


def start_flow(user_id: int, server_id: int, flow: dict[str, Any], *, shared: bool) -> None:
    PendingSignIn.objects.filter(expires_at__lt=time.time() - FLOW_SECONDS).delete()
    PendingSignIn.objects.create(
        state_hash=digest(flow["state"]),
        user_id=user_id,
        server_id=server_id,
        shared=shared,
        flow=flow,
        expires_at=time.time() + FLOW_SECONDS,
    )


def find_flow(state: str) -> PendingSignIn | None:
    """The pending sign-in of this state, unused and unexpired (not yet taken)."""
    return (
        PendingSignIn.objects.filter(
            state_hash=digest(state), used_at__isnull=True, expires_at__gt=time.time()
        )
        .select_related("server__toolbox__tenant")
        .first()
    )


def take_flow(pending: PendingSignIn) -> bool:
    """Use the pending sign-in once (False: another request took it first)."""
    return bool(
        PendingSignIn.objects.filter(pk=pending.pk, used_at__isnull=True).update(
            used_at=timezone.now()
        )
    )


def save_sign_in(server: Server, user_id: int | None, tokens: dict[str, Any], account: str) -> None:
    with transaction.atomic():
        row = SignIn.objects.filter(server=server, user_id=user_id).first()
        if row is None:
            SignIn.objects.create(server=server, user_id=user_id, tokens=tokens, account=account)
        else:
            row.tokens, row.account, row.status = tokens, account, CONNECTED
            row.version += 1
            row.refreshing_until = None
            row.save()
        _bump(server.pk)


def remove(rows: Any) -> list[dict[str, Any]]:
    """Delete sign-ins; their tokens are returned, for revocation at the vendor."""
    with transaction.atomic():
        taken = list(rows.select_related("server"))
        for row in taken:
            _bump(row.server_id)
        SignIn.objects.filter(pk__in=[row.pk for row in taken]).delete()
    return [row.tokens for row in taken]
