"""django-oauth-toolkit's configuration for the MCP authorization spec (imported by settings,
so nothing here touches models).

Only what the spec needs is switched on: authorization code with PKCE S256, refresh tokens
that rotate, revocation, open dynamic registration (unless turned off). Tokens are stored as
their SHA-256 only (RFC 9700 token storage) and carry a prefix that tells the gateway, before
any lookup, that a bearer value is an OAuth token and not an API key.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings

ACCESS_TOKEN_PREFIX = "wbo_"
REFRESH_TOKEN_PREFIX = "wbr_"
MCP_SCOPE = "mcp"
# A sign-in for the management API (/api/v1), acting with the member's roles in one tenant;
# never valid at /mcp, as an MCP sign-in is never valid at /api/v1.
API_SCOPE = "api"
API_RESOURCE_PATH = "/api/v1"
API_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource" + API_RESOURCE_PATH
TOKEN_BYTES = 32


def new_access_token(request: Any = None) -> str:
    """oauthlib's token generator: 256 random bits behind the prefix the gateway looks for."""
    return ACCESS_TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def new_refresh_token(request: Any = None) -> str:
    return REFRESH_TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def access_token_seconds(request: Any = None) -> int:
    """Read at each issue (not once at start), so the setting can change under tests."""
    return int(settings.WORKBENCH_OAUTH_ACCESS_TOKEN_SECONDS)


def provider_settings(
    *,
    issuer: str,
    registration: bool,
    client_id_documents: bool,
    refresh_token_seconds: int,
    redirect_schemes: list[str],
    loopback_http: bool,
) -> dict[str, Any]:
    """The OAUTH2_PROVIDER setting."""
    schemes = [scheme.lower() for scheme in redirect_schemes]
    if loopback_http and "http" not in schemes:
        schemes.append("http")  # accepted for loopback hosts only (accounts.oauth_clients)
    return {
        "SCOPES": {
            MCP_SCOPE: "Use the tenant's toolboxes through /mcp",
            API_SCOPE: "Manage the tenant through the management API (/api/v1), with your roles",
        },
        "DEFAULT_SCOPES": [MCP_SCOPE],
        "ACCESS_TOKEN_EXPIRE_SECONDS": access_token_seconds,
        "REFRESH_TOKEN_EXPIRE_SECONDS": refresh_token_seconds,
        "ACCESS_TOKEN_GENERATOR": "accounts.oauth_config.new_access_token",
        "REFRESH_TOKEN_GENERATOR": "accounts.oauth_config.new_refresh_token",
        "ROTATE_REFRESH_TOKEN": True,
        "REFRESH_TOKEN_REUSE_PROTECTION": True,
        "PKCE_REQUIRED": True,
        "ALLOWED_REDIRECT_URI_SCHEMES": schemes,
        "ALLOW_LOCALHOST_LOOPBACK": loopback_http,
        "DCR_ENABLED": registration,
        "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
        "CIMD_ENABLED": client_id_documents,
        "CIMD_METADATA_FETCHER": "accounts.oauth_cimd.EgressFetcher",
        "OAUTH2_VALIDATOR_CLASS": "accounts.oauth_validator.GrantValidator",
        "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
        "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
        "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
            "none",
            "client_secret_basic",
            "client_secret_post",
        ],
        "OAUTH2_PROTECTED_RESOURCE_NAME": "Workbench",
        # Empty: DOT derives the issuer from the request.
        "OIDC_ISS_ENDPOINT": issuer,
        "REQUEST_APPROVAL_PROMPT": "force",
        "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
        "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
        "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
        "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
        "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
        "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,  # RFC 9207: `iss` on the redirect
        "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
        "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    }
