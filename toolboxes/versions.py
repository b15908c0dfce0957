"""A per-tenant configuration version in the shared cache, bumped on every change.

Readers (the gateway, in any process) keep their own snapshots of a tenant's keys and
toolboxes and reload them when this number moves, so a revoked key or an edited server
takes effect at once wherever the cache is shared (CACHE_URL). The entry names the
database's installation too: another database's tenant of the same id has its own. What
bumps it on a change: `toolboxes.signals`.
"""

import time

from django.core.cache import cache

from kernel.store_names import installation_prefix
from toolboxes.installation import installation_id


def version_key(tenant_id: int, installation: str | None = None) -> str:
    """The tenant's entry; `installation` given by a caller on an event loop (the gateway,
    which read it at start), else read here (ORM, once per process)."""
    return f"{installation_prefix(installation or installation_id())}:tenant-version:{tenant_id}"


def bump(tenant_id: int) -> None:
    # A fresh value rather than incr(): works whether or not the key was evicted.
    cache.set(version_key(tenant_id), time.time_ns(), timeout=None)
