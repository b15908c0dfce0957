"""Django system checks of this deployment (run before every management command).

One store per deployment (issue 23): a command that changes what gateways read (revoke a
key, import a configuration) writes to the shared store too, where gateways learn of it.
Pointed at another store than the running gateways' (another CACHE_URL, another
WORKBENCH_STORE_DIR), it would write where nobody reads: a revoked key would go on
working. Each gateway records its store at start; a command with another refuses to run.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register
from django.db import DatabaseError

from kernel.store_names import describe_store
from toolboxes.installation import recorded_store

ANOTHER_STORE = (
    "This process's shared store is not the gateways': it uses {mine}; the gateways of "
    "this database use {theirs} (recorded at a gateway's start, {when:%Y-%m-%d %H:%M} UTC). "
    "A change made here would reach no gateway (a revoked key would go on working)."
)
ANOTHER_STORE_HINT = (
    "Run it with the gateways' CACHE_URL (or WORKBENCH_STORE_DIR for the embedded store); "
    "if those gateways are gone for good, start one with this store, or pass --skip-checks."
)


@register()
def one_store(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    try:
        recorded = recorded_store()
    except DatabaseError:  # no database yet, or not migrated: no gateway has recorded one
        return []
    mine = describe_store(settings.CACHES["default"])
    if recorded is None or recorded[0] == mine:
        return []
    theirs, when = recorded
    message = ANOTHER_STORE.format(mine=mine, theirs=theirs, when=when)
    return [Error(message, hint=ANOTHER_STORE_HINT, id="workbench.E001")]
