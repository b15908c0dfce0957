"""When a connected account may no longer be used, it goes: a removed membership (the
tenant's servers), a deactivated user (all of theirs), a deactivated tenant (all of its).
The tokens are deleted here and revoked at the vendor (RFC 7009) once the change is
committed."""

from __future__ import annotations

import logging
import threading
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.db import connections, transaction
from django.db.models.signals import post_delete, post_save

from accounts.models import Membership
from connections import store
from connections.models import SignIn
from toolboxes.models import Tenant

logger = logging.getLogger("workbench.connected")


def revoke_all(tokens: list[dict[str, Any]]) -> None:
    """Revoke tokens at their vendors; a vendor that does not answer is logged, not raised
    (the tokens are deleted here either way)."""
    from kernel.oauth_sign_in import revoke  # the SDK: when used, not at every command's start

    try:
        for saved in tokens:
            try:
                async_to_sync(revoke)(saved)
            except Exception:
                logger.warning("a connected account's revocation failed at %s", saved.get("issuer"))
    finally:
        connections.close_all()  # this thread's own, if it opened one: back to the pool


def remove_and_revoke(rows: Any) -> None:
    """Delete at once; revoke at the vendors on a thread of its own once committed (a slow
    vendor holds no request, nor the thread the ORM shares with the gateway)."""
    tokens = store.remove(rows)
    if tokens:
        transaction.on_commit(
            lambda: threading.Thread(
                target=revoke_all, args=(tokens,), name="revoke-sign-ins", daemon=True
            ).start()
        )


def _membership_removed(sender: type, instance: Membership, **kwargs: Any) -> None:
    rows = SignIn.objects.filter(
        user_id=instance.user_id, server__toolbox__tenant_id=instance.tenant_id
    )
    remove_and_revoke(rows)


def _user_saved(sender: type, instance: Any, **kwargs: Any) -> None:
    if not instance.is_active:
        remove_and_revoke(SignIn.objects.filter(user_id=instance.pk))


def _tenant_saved(sender: type, instance: Tenant, **kwargs: Any) -> None:
    if not instance.is_active:
        remove_and_revoke(SignIn.objects.filter(server__toolbox__tenant=instance))


def connect_signals() -> None:
    post_delete.connect(_membership_removed, sender=Membership, dispatch_uid="sign_ins_member")
    post_save.connect(_user_saved, sender=get_user_model(), dispatch_uid="sign_ins_user")
    post_save.connect(_tenant_saved, sender=Tenant, dispatch_uid="sign_ins_tenant")
