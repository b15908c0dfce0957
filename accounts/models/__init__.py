"""People: memberships and one-time passwords, members' OAuth sign-ins, their
personal access tokens for the management API, and single sign-on."""

from accounts.models.api_tokens import ApiToken
from accounts.models.members import Membership, OneTimePassword, Role
from accounts.models.oauth import GrantScope, OAuthGrant, OAuthGrantToken
from accounts.models.sso import (
    SsoGroupMapping,
    SsoIdentity,
    SsoLogoutToken,
    SsoMembership,
    SsoSession,
)

__all__ = [
    "ApiToken",
    "GrantScope",
    "Membership",
    "OAuthGrant",
    "OAuthGrantToken",
    "OneTimePassword",
    "Role",
    "SsoGroupMapping",
    "SsoIdentity",
    "SsoLogoutToken",
    "SsoMembership",
    "SsoSession",
]
