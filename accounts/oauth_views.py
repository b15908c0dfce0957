"""The authorization server's answers beside the consent page: metadata (RFC 9728; RFC 8414
is DOT's), the token endpoint's JSON, and a JSON 404 for everything else under
`/.well-known/` and `/oauth/` (`accounts.oauth_urls`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from oauth2_provider.views import OAuthProtectedResourceMetadataView, TokenView

from accounts.oauth_callers import RESOURCE_PATH
from accounts.oauth_config import API_RESOURCE_PATH, API_SCOPE, MCP_SCOPE


def resource_id(request: HttpRequest) -> str:
    """The protected resource (RFC 8707 / RFC 9728): the MCP endpoint as clients reach it,
    WORKBENCH_PUBLIC_URL, or the endpoint at this request's origin."""
    return settings.WORKBENCH_PUBLIC_URL.rstrip("/") or (
        request.build_absolute_uri("/").rstrip("/") + RESOURCE_PATH
    )


def public_base(request: HttpRequest) -> str:
    """Where the authorization server is (its issuer): the resource without `/mcp`."""
    return resource_id(request).removesuffix(RESOURCE_PATH)


def api_resource_id(request: HttpRequest) -> str:
    """The management API as a protected resource: beside /mcp, at /api/v1."""
    return public_base(request) + API_RESOURCE_PATH


def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """A well-known or OAuth path nothing is served at: JSON, as clients that probe expect."""
    return JsonResponse(
        {"error": "not_found", "error_description": f"Nothing is served at {request.path}."},
        status=404,
    )


class ResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728: `/mcp` is protected, and this server is its authorization server."""

    def get_resource(self, request: HttpRequest) -> str:
        return resource_id(request)

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        return [public_base(request)]

    def get_scopes_supported(self) -> list[str]:
        return [MCP_SCOPE]


class ApiResourceMetadataView(ResourceMetadataView):
    """RFC 9728 for the management API: its sign-ins ask for scope `api`."""

    def get_resource(self, request: HttpRequest) -> str:
        return api_resource_id(request)

    def get_scopes_supported(self) -> list[str]:
        return [API_SCOPE]


class TokenEndpoint(TokenView):
    """DOT's token endpoint; every answer, errors raised while saving a token included, is
    JSON and says so."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        if response.content.startswith(b"{"):
            response["Content-Type"] = "application/json"
        return response
