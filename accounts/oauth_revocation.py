"""When an OAuth token must stop working, tell the gateway: bump the tenant's version.

The gateway keeps what a token resolved to for as long as the tenant's configuration
version (`toolboxes.versions`) stays the same, exactly as it keeps API keys, so a revoked
token, a withdrawn grant, a removed membership, a member made a viewer or a deactivated
user stops working in every gateway process at its next request (a tenant deactivated
already bumps the version).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from accounts.models import Membership, OAuthGrant, OAuthGrantToken
from toolboxes import versions


def bump_later(tenant_id: int | None) -> None:
    if tenant_id is not None:
        transaction.on_commit(lambda: versions.bump(tenant_id))


def _grant_changed(sender: type, instance: OAuthGrant, **kwargs: Any) -> None:
    bump_later(instance.tenant_id)


def _token_gone(sender: type, instance: OAuthGrantToken, **kwargs: Any) -> None:
    """An access token deleted (revoked, rotated away, cleared): its cached caller goes."""
    if instance.access_token_id is None:
        return
    tenant_id = (
        OAuthGrant.objects.filter(pk=instance.grant_id).values_list("tenant_id", flat=True).first()
    )
    bump_later(tenant_id)


def _membership_changed(sender: type, instance: Membership, **kwargs: Any) -> None:
    """Removed, or its role changed (a viewer's tokens stop): the tenant's tokens are
    asked about again."""
    bump_later(instance.tenant_id)


def _user_saved(sender: type, instance: Any, **kwargs: Any) -> None:
    """A deactivated user's tokens stop (a login's last_login update bumps nothing)."""
    if instance.is_active:
        return
    tenant_ids = set(
        OAuthGrant.objects.filter(user=instance, revoked_at__isnull=True).values_list(
            "tenant_id", flat=True
        )
    )
    for tenant_id in tenant_ids:
        bump_later(tenant_id)


def connect_signals() -> None:
    post_save.connect(_grant_changed, sender=OAuthGrant, dispatch_uid="wb-oauth-grant-save")
    post_delete.connect(_grant_changed, sender=OAuthGrant, dispatch_uid="wb-oauth-grant-delete")
    post_delete.connect(_token_gone, sender=OAuthGrantToken, dispatch_uid="wb-oauth-token-gone")
    post_delete.connect(_membership_changed, sender=Membership, dispatch_uid="wb-oauth-member-gone")
    post_save.connect(_membership_changed, sender=Membership, dispatch_uid="wb-oauth-member-saved")
    post_save.connect(_user_saved, sender=get_user_model(), dispatch_uid="wb-oauth-user-saved")
