"""Which clients may register themselves (RFC 7591), on top of DOT's registration view.

Only what the MCP authorization spec needs: the authorization code grant (with refresh
tokens), response type `code`, and redirect URIs over https (the schemes in
WORKBENCH_OAUTH_REDIRECT_SCHEMES) or plain http on a loopback address for native clients
(WORKBENCH_OAUTH_LOOPBACK_HTTP). Refusals are RFC 7591 JSON errors.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.views import DynamicClientRegistrationView

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})
RESPONSE_TYPES = frozenset({"code"})


def redirect_uri_refusal(uri: str) -> str:
    """Why `uri` may not be a redirect URI ("" when it may)."""
    parsed = urlsplit(uri)
    scheme = parsed.scheme.lower()
    schemes = [name.lower() for name in settings.WORKBENCH_OAUTH_REDIRECT_SCHEMES]
    loopback_http = (
        settings.WORKBENCH_OAUTH_LOOPBACK_HTTP
        and scheme == "http"
        and (parsed.hostname or "") in LOOPBACK_HOSTS
    )
    if parsed.fragment:
        return f"redirect URI '{uri}' must not have a fragment"
    if loopback_http or (scheme in schemes and (scheme != "https" or parsed.hostname)):
        return ""
    allowed = " or ".join(schemes)
    if settings.WORKBENCH_OAUTH_LOOPBACK_HTTP:
        allowed += " (or http on a loopback address: localhost, 127.0.0.1, [::1])"
    return f"redirect URI '{uri}' is not allowed: use {allowed}"


def _metadata_refusal(data: Any) -> tuple[str, str] | None:
    """(RFC 7591 error, description) for metadata this server will not register."""
    if not isinstance(data, dict):
        return None  # DOT's own view says what is wrong with the body
    uris = data.get("redirect_uris")
    if isinstance(uris, list):
        for uri in uris:
            refusal = redirect_uri_refusal(uri) if isinstance(uri, str) else ""
            if refusal:
                return "invalid_redirect_uri", refusal
    grant_types = data.get("grant_types", ["authorization_code"])
    if isinstance(grant_types, list) and not set(grant_types) <= GRANT_TYPES:
        others = ", ".join(sorted(set(map(str, grant_types)) - GRANT_TYPES))
        return (
            "invalid_client_metadata",
            f"grant_types: only authorization_code and refresh_token are supported, not {others}",
        )
    response_types = data.get("response_types", ["code"])
    if isinstance(response_types, list) and not set(response_types) <= RESPONSE_TYPES:
        return "invalid_client_metadata", "response_types: only code is supported"
    return None


@method_decorator(csrf_exempt, name="dispatch")
class RegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration, open to anyone while WORKBENCH_OAUTH_REGISTRATION is on: what
    a client registers grants nothing until a member consents, and the consent page marks
    such a client unverified."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            data = json.loads(request.body)
        except ValueError:
            data = None
        refusal = _metadata_refusal(data)
        if refusal is not None:
            error, description = refusal
            return JsonResponse({"error": error, "error_description": description}, status=400)
        return super().post(request, *args, **kwargs)
