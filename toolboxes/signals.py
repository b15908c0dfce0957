"""What the admins' models do when they change, connected in `ToolboxesConfig.ready`:
every change a gateway must see bumps the tenant's configuration version
(`toolboxes.versions`), and a key given toolboxes is marked limited for good.
"""

from typing import Any

from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from toolboxes.models import (
    ApiKey,
    CatalogEntry,
    CatalogParameter,
    PolicyDefaults,
    Server,
    Tenant,
    Toolbox,
    ToolPolicy,
)
from toolboxes.versions import bump


def _mark_limited(sender: type, instance: Any, action: str, **kwargs: Any) -> None:
    """Set for good once toolboxes are chosen: a limited key whose toolboxes are all
    deleted then sees none of them, instead of silently seeing every toolbox."""
    if action == "post_add" and isinstance(instance, ApiKey) and not instance.limited:
        instance.limited = True
        ApiKey.objects.filter(pk=instance.pk).update(limited=True)


def _tenant_id_of(instance: Any) -> int | None:
    if isinstance(instance, Tenant):
        return instance.pk
    if isinstance(instance, Toolbox | ApiKey | ToolPolicy | PolicyDefaults):
        return instance.tenant_id
    if isinstance(instance, Server):
        return (
            Toolbox.objects.filter(pk=instance.toolbox_id)
            .values_list("tenant_id", flat=True)
            .first()
        )
    return None


def _on_change(sender: type, instance: Any, **kwargs: Any) -> None:
    tenant_id = _tenant_id_of(instance)
    if tenant_id is not None:
        # After commit: readers must not reload the old rows before the change is visible.
        transaction.on_commit(lambda: bump(tenant_id))


def _on_catalog_change(sender: type, instance: Any, **kwargs: Any) -> None:
    """An entry (or one of its parameters) changed: every tenant with a server made from it
    reloads, and those servers' fingerprints change with what they now run."""
    entry_id = instance.pk if isinstance(instance, CatalogEntry) else instance.entry_id
    tenant_ids = set(
        Toolbox.objects.filter(servers__catalog_entry_id=entry_id).values_list(
            "tenant_id", flat=True
        )
    )
    for tenant_id in tenant_ids:
        transaction.on_commit(lambda tenant_id=tenant_id: bump(tenant_id))


def connect_signals() -> None:
    m2m_changed.connect(
        _mark_limited, sender=ApiKey.toolboxes.through, dispatch_uid="wb-key-limited"
    )
    for model in (Tenant, ApiKey, Toolbox, Server, ToolPolicy, PolicyDefaults):
        name = model.__name__
        post_save.connect(_on_change, sender=model, dispatch_uid=f"wb-version-save-{name}")
        post_delete.connect(_on_change, sender=model, dispatch_uid=f"wb-version-delete-{name}")
    m2m_changed.connect(
        _on_change, sender=ApiKey.toolboxes.through, dispatch_uid="wb-version-key-toolboxes"
    )
    m2m_changed.connect(  # an "ask" rule's approvers, copied into each approval it asks
        _on_change, sender=ToolPolicy.approvers.through, dispatch_uid="wb-version-approvers"
    )
    for model in (CatalogEntry, CatalogParameter):
        name = model.__name__
        post_save.connect(_on_catalog_change, sender=model, dispatch_uid=f"wb-version-save-{name}")
        post_delete.connect(
            _on_catalog_change, sender=model, dispatch_uid=f"wb-version-delete-{name}"
        )
