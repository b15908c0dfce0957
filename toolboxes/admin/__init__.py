"""The admins' screens, one module per screen; what every app's admin shares
(pages, hand-off, scoping) is `kernel.admin_kit`.

Imported by the admin's autodiscovery: each module registers its ModelAdmins.
"""

from toolboxes.admin import catalog, keys, pins, policies, servers, tenants

__all__ = ["catalog", "keys", "pins", "policies", "servers", "tenants"]
