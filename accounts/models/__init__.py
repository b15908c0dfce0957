"""People: memberships and one-time passwords, members' OAuth sign-ins, single sign-on."""

from accounts.models.members import ADMIN, VIEWER, Membership, OneTimePassword, Role
from accounts.models.oauth import OAuthGrant, OAuthGrantToken
from accounts.models.sso import (
    SsoGroupMapping,
    SsoIdentity,
    SsoLogoutToken,
    SsoMembership,
    SsoSession,
)

__all__ = [
    "ADMIN",
    "VIEWER",
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
