"""People: memberships and one-time passwords, and members' OAuth sign-ins."""

from accounts.models.members import ADMIN, VIEWER, Membership, OneTimePassword, Role
from accounts.models.oauth import OAuthGrant, OAuthGrantToken

__all__ = [
    "ADMIN",
    "VIEWER",
    "Membership",
    "OAuthGrant",
    "OAuthGrantToken",
    "OneTimePassword",
    "Role",
]
