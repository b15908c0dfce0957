"""The authorization server's URLs, at the site root (RFC 8414 and RFC 9728 look there).

Named in DOT's `oauth2_provider` namespace, as its metadata view builds the endpoint URLs
from those names. Anything else under `/.well-known/` or `/oauth/` answers JSON 404.
"""

from django.urls import include, path, re_path
from oauth2_provider.views import (
    DynamicClientRegistrationManagementView,
    OAuthServerMetadataView,
    RevokeTokenView,
)

from accounts.oauth_clients import RegistrationView
from accounts.oauth_config import API_RESOURCE_METADATA_PATH
from accounts.oauth_consent import ConsentView
from accounts.oauth_views import (
    ApiResourceMetadataView,
    ResourceMetadataView,
    TokenEndpoint,
    not_found,
)

_named = [
    path(
        ".well-known/oauth-authorization-server",
        OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    # RFC 9728: the path-component form for /mcp, and the root form clients fall back to.
    path(
        ".well-known/oauth-protected-resource/mcp",
        ResourceMetadataView.as_view(),
        name="oauth-resource-metadata",
    ),
    path(".well-known/oauth-protected-resource", ResourceMetadataView.as_view()),
    # The management API's.
    path(API_RESOURCE_METADATA_PATH.lstrip("/"), ApiResourceMetadataView.as_view()),
    path("oauth/authorize", ConsentView.as_view(), name="authorize"),
    path("oauth/token", TokenEndpoint.as_view(), name="token"),
    path("oauth/revoke", RevokeTokenView.as_view(), name="revoke-token"),
    path("oauth/register", RegistrationView.as_view(), name="dcr-register"),
    # RFC 7592: a registered client reads, updates or deletes itself with its own token.
    path(
        "oauth/register/<str:client_id>",
        DynamicClientRegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
]

urlpatterns = [
    path("", include((_named, "oauth2_provider"))),
    # Probes of clients such as mcp-remote, and anything else nobody serves: JSON.
    re_path(r"^\.well-known/", not_found),
    re_path(r"^oauth/", not_found),
    re_path(r"^mcp/\.well-known/", not_found),
]
