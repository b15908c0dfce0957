"""Tool policies may name an identity provider's groups (`kernel.tool_policy`): when the
groups a person's sign-in brought change, the tenants they are a member of reload their
snapshot, so that the gateway decides with the groups as they are now."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_init, post_save

from accounts.models import Membership, SsoIdentity
from toolboxes import versions

_SEEN = "_workbench_groups_as_loaded"


def _loaded(sender: type, instance: SsoIdentity, **kwargs: Any) -> None:
    setattr(instance, _SEEN, list(instance.groups or []))


def _saved(sender: type, instance: SsoIdentity, created: bool, **kwargs: Any) -> None:
    groups = list(instance.groups or [])
    if not created and groups == getattr(instance, _SEEN, None):
        return
    setattr(instance, _SEEN, groups)
    tenant_ids = set(
        Membership.objects.filter(user_id=instance.user_id).values_list("tenant_id", flat=True)
    )
    for tenant_id in tenant_ids:
        transaction.on_commit(lambda tenant_id=tenant_id: versions.bump(tenant_id))


def connect_signals() -> None:
    post_init.connect(_loaded, sender=SsoIdentity, dispatch_uid="wb-policy-groups-loaded")
    post_save.connect(_saved, sender=SsoIdentity, dispatch_uid="wb-policy-groups-saved")
