"""A per-tenant configuration version in the shared cache, bumped on every change.

Readers (the gateway, in any process) keep their own snapshots of a tenant's keys and
toolboxes and reload them when this number moves, so a revoked key or an edited server
takes effect at once wherever the cache is shared (CACHE_URL). The entry names the
database's installation too: another database's tenant of the same id has its own.
"""

import time
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from mcp_gateway.store import installation_prefix
from toolboxes.installation import installation_id
from toolboxes.models import ApiKey, CatalogEntry, CatalogParameter, Server, Tenant, Toolbox


def version_key(tenant_id: int, installation: str | None = None) -> str:
    """The tenant's entry; `installation` given by a caller on an event loop (the gateway,
    which read it at start), else read here (ORM, once per process)."""
    return f"{installation_prefix(installation or installation_id())}:tenant-version:{tenant_id}"


def bump(tenant_id: int) -> None:
    # A fresh value rather than incr(): works whether or not the key was evicted.
    cache.set(version_key(tenant_id), time.time_ns(), timeout=None)


def _tenant_id_of(instance: Any) -> int | None:
    if isinstance(instance, Tenant):
        return instance.pk
    if isinstance(instance, Toolbox | ApiKey):
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
    for model in (Tenant, ApiKey, Toolbox, Server):
        name = model.__name__
        post_save.connect(_on_change, sender=model, dispatch_uid=f"wb-version-save-{name}")
        post_delete.connect(_on_change, sender=model, dispatch_uid=f"wb-version-delete-{name}")
    m2m_changed.connect(
        _on_change, sender=ApiKey.toolboxes.through, dispatch_uid="wb-version-key-toolboxes"
    )
    for model in (CatalogEntry, CatalogParameter):
        name = model.__name__
        post_save.connect(_on_catalog_change, sender=model, dispatch_uid=f"wb-version-save-{name}")
        post_delete.connect(
            _on_catalog_change, sender=model, dispatch_uid=f"wb-version-delete-{name}"
        )
