"""The admins' screens, one module per screen; `pages` holds what they share.

Imported by the admin's autodiscovery: each module registers its ModelAdmins.
"""

from toolboxes.admin import catalog, keys, pins, servers, tenants

__all__ = ["catalog", "keys", "pins", "servers", "tenants"]
