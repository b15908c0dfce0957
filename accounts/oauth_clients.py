"""Which clients may register themselves (RFC 7591), on top of DOT's registration view.

Only what the MCP authorization spec needs: the authorization code grant (with refresh
tokens), response type `code`, and redirect URIs over https (the schemes in
WORKBENCH_OAUTH_REDIRECT_SCHEMES) or plain http on a loopback address for native clients
(WORKBENCH_OAUTH_LOOPBACK_HTTP). Refusals are RFC 7591 JSON errors.

Two things keep self-registered clients from piling up in the admin. A registration that
carries a credential is refused: an OAuth client given an API key (`mcp-remote --header`,
which sends its headers to every OAuth endpoint too) answers the 401 of a refused key by
registering and waiting for a sign-in that cannot help, and this refusal ends its run at
once instead. And a self-registered client that no member consented to within
WORKBENCH_OAUTH_UNUSED_CLIENT_SECONDS (a sign-in abandoned) is deleted at the next
registration.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.models import get_application_model
from oauth2_provider.views import DynamicClientRegistrationView

from accounts.key_refusals import key_refusal

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})
RESPONSE_TYPES = frozenset({"code"})
# RFC 7591 lets a registration endpoint take an initial access token (RFC 6750); Workbench
# issues none, so a credential here is a client's API key, most likely one /mcp refused:
# the refusal says why, as /mcp did.
CARRIES_CREDENTIAL = (
    "This registration request carries a credential (Authorization: Bearer or X-API-Key)."
)
NOT_FOR_KEYS = (
    "A client that sends an API key does not register for OAuth: fix or replace the key, "
    "or remove the header to sign in with OAuth instead."
)


def carries_credential(request: HttpRequest) -> bool:
    """Whether the request sends an API key or a bearer token (a Basic header, say from a
    proxy in front, is not one)."""
    authorization = request.headers.get("Authorization", "").strip()
    bearer = authorization.partition(" ")[0].lower() == "bearer"
    return bearer or bool(request.headers.get("X-API-Key", "").strip())


def credential_refused(request: HttpRequest) -> JsonResponse:
    """401 invalid_token (RFC 6750), saying why /mcp refuses the key when it does."""
    reason = key_refusal(
        request.headers.get("Authorization", ""), request.headers.get("X-API-Key", "")
    )
    description = f"{reason or CARRIES_CREDENTIAL} {NOT_FOR_KEYS}"
    response = JsonResponse(
        {"error": "invalid_token", "error_description": description}, status=401
    )
    quoted = description.replace('"', "'")
    response["WWW-Authenticate"] = f'Bearer error="invalid_token", error_description="{quoted}"'
    return response


def delete_unused_registrations() -> int:
    """Delete the self-registered clients older than WORKBENCH_OAUTH_UNUSED_CLIENT_SECONDS
    that no member ever consented to (no `OAuthGrant`, revoked or not): nobody can use
    them, and nothing else would remove them. Returns how many."""
    application = get_application_model()
    cutoff = timezone.now() - timedelta(seconds=settings.WORKBENCH_OAUTH_UNUSED_CLIENT_SECONDS)
    unused = application.objects.filter(
        registration_source=application.RegistrationSource.DCR,
        created__lt=cutoff,
        workbench_grants__isnull=True,
    )
    _, deleted = unused.delete()
    return deleted.get(application._meta.label, 0)


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
        if carries_credential(request):
            return credential_refused(request)
        try:
            data = json.loads(request.body)
        except ValueError:
            data = None
        refusal = _metadata_refusal(data)
        if refusal is not None:
            error, description = refusal
            return JsonResponse({"error": error, "error_description": description}, status=400)
        delete_unused_registrations()
        return super().post(request, *args, **kwargs)
