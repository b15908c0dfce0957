"""People: memberships and one-time passwords, members' OAuth sign-ins, and their
personal access tokens for the management API."""

from accounts.models.api_tokens import ApiToken
from accounts.models.members import ADMIN, VIEWER, Membership, OneTimePassword, Role
from accounts.models.oauth import GrantScope, OAuthGrant, OAuthGrantToken

__all__ = [
    "ADMIN",
    "VIEWER",
    "ApiToken",
    "GrantScope",
    "Membership",
    "OAuthGrant",
    "OAuthGrantToken",
    "OneTimePassword",
    "Role",
]
