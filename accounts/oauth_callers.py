"""The one question the gateway asks about OAuth: which caller is this access token?

`token_caller` answers with plain data (never a model): the grant, its tenant, the
toolboxes it is limited to, when the token expires, and why it may no longer be used. The
gateway keeps the answer while the tenant's configuration version stays the same; every
way a token stops working bumps that version (`accounts.oauth_revocation`). Sync: call it
off the event loop.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.core.cache import cache
from oauth2_provider.models import get_access_token_model

from accounts.models import GrantScope, OAuthGrant
from accounts.oauth_config import ACCESS_TOKEN_PREFIX
from toolboxes import versions

# Where the gateway's 401 sends clients to discover the authorization server (RFC 9728),
# relative to the public base URL; the document itself is served by accounts.oauth_views.
RESOURCE_PATH = "/mcp"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource" + RESOURCE_PATH


@dataclass(frozen=True, slots=True)
class TokenCaller:
    grant_id: int
    tenant_id: int
    toolboxes: frozenset[str] | None  # None: every toolbox of the tenant
    expires_at: float
    member: str  # the user's name, for the call log
    refusal: str  # "" while usable; else revoked_grant, inactive_user, not_a_member, viewer_role,
    # api_scope (a sign-in for the management API)
    version: int  # the tenant's configuration version this answer was read at
    user_id: int = 0  # the member, whose connected accounts its calls use


def is_access_token(value: str) -> bool:
    """Whether a bearer value has the form of an OAuth access token (not an API key)."""
    return value.startswith(ACCESS_TOKEN_PREFIX)


def token_checksum(token: str) -> str:
    """What the token is stored and cached as (its SHA-256; DOT's `token_checksum`)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_caller(checksum: str) -> TokenCaller | None:
    """The caller of the access token whose SHA-256 is `checksum`, or None if there is no
    such token issued under a grant (unknown, revoked and deleted, or not an MCP token)."""
    access_token = (
        get_access_token_model()
        .objects.filter(token_checksum=checksum, workbench_link__isnull=False)
        .select_related("workbench_link")
        .first()
    )
    if access_token is None:
        return None
    grant_id = access_token.workbench_link.grant_id
    tenant_id = OAuthGrant.objects.filter(pk=grant_id).values_list("tenant_id", flat=True).first()
    if tenant_id is None:
        return None
    # The version before the rows: a change racing this read then forces another one.
    version = cache.get(versions.version_key(tenant_id), 0)
    grant = OAuthGrant.objects.select_related("user").filter(pk=grant_id).first()
    if grant is None:
        return None
    names = frozenset(grant.toolboxes.values_list("name", flat=True))
    return TokenCaller(
        grant_id=grant.pk,
        tenant_id=grant.tenant_id,
        toolboxes=names if grant.limited else None,
        expires_at=access_token.expires.timestamp(),
        member=grant.user.get_username(),
        # A sign-in for the management API is never one for /mcp.
        refusal="api_scope" if grant.scope == GrantScope.API else grant.refusal(),
        version=version,
        user_id=grant.user_id,
    )
