"""People in the admin: members (invited with a one-time password) and OAuth sign-ins,
one module each; every tenant-scoped screen uses `accounts.admin_scope.TenantScoped`.

Imported by the admin's autodiscovery: each module registers its ModelAdmins.
"""

from accounts.admin import members, oauth_grants, sso

__all__ = ["members", "oauth_grants", "sso"]
