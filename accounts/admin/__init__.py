"""People in the admin: members (invited with a one-time password), OAuth sign-ins and
personal API tokens, one module each; every tenant-scoped screen uses
`kernel.admin_kit.scoping.TenantScoped`.

Imported by the admin's autodiscovery: each module registers its ModelAdmins.
"""

from accounts.admin import api_tokens, members, oauth_grants, sso

__all__ = ["api_tokens", "members", "oauth_grants", "sso"]
