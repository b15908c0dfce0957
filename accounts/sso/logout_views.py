"""The provider's word that a person logged out: OpenID Connect Back-Channel Logout 1.0
and Front-Channel Logout 1.0.

The back channel's logout token is signed by the provider, for this client (audience),
once (`jti`): it ends the person's admin sessions and revokes their grants and API tokens
(`sessions.end_access`). The front channel's URL carries nothing signed, only `iss` and a
`sid` that every application of the provider finds in its ID tokens: it is off unless the
provider opts in (`frontchannel_logout`), and then ends the admin sessions of that provider
session only (`sessions.end_provider_session`), never a grant or a token (issue 31)."""

from __future__ import annotations

from datetime import timedelta

from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from accounts.models import SsoIdentity, SsoLogoutToken
from accounts.sso import discovery
from accounts.sso.http import ProviderUnreachable
from accounts.sso.id_tokens import LOGOUT_TOKEN_SECONDS, LogoutTokenRefused, logout_token_claims
from accounts.sso.providers import provider_named
from accounts.sso.sessions import end_access, end_provider_session

FRONTCHANNEL_OFF = "Front-channel logout is off for this identity provider."
FRONTCHANNEL_PARAMETERS = "The iss and sid parameters are required."


def _logout_answer(error: str, status: int = 400) -> JsonResponse:
    response = JsonResponse({"error": "invalid_request", "error_description": error}, status=status)
    response["Cache-Control"] = "no-store"
    return response


@csrf_exempt
@require_POST
def backchannel_logout(request: HttpRequest, name: str) -> HttpResponse:
    """OpenID Connect Back-Channel Logout 1.0: the provider says a person's session (sid)
    or the person (sub) is logged out; their admin sessions end and their grants go."""
    provider = provider_named(name)
    if provider is None:
        return _logout_answer("no such identity provider", 404)
    token = request.POST.get("logout_token", "")
    if not token:
        return _logout_answer("the logout_token parameter is required")
    try:
        claims = logout_token_claims(provider, token)
        issuer = discovery.metadata(provider)["issuer"]
    except LogoutTokenRefused as exc:
        return _logout_answer(str(exc))
    except ProviderUnreachable:
        return _logout_answer("the provider's keys could not be fetched", 503)
    # A jti older than the tokens accepted (by iat) can no longer be replayed: forgotten.
    stale = timezone.now() - timedelta(seconds=2 * LOGOUT_TOKEN_SECONDS)
    SsoLogoutToken.objects.filter(received_at__lt=stale).delete()
    try:
        with transaction.atomic():
            SsoLogoutToken.objects.create(issuer=issuer, jti=claims["jti"][:255])
    except IntegrityError:
        return _logout_answer("the logout token was already used")
    sub, sid = claims.get("sub"), str(claims.get("sid") or "")
    if sub:
        found = list(SsoIdentity.objects.filter(issuer=issuer, subject=sub))
    else:
        found = list(SsoIdentity.objects.filter(issuer=issuer, sessions__sid=sid).distinct())
    for identity in found:
        end_access(identity, sid)
    response = HttpResponse(status=200)
    response["Cache-Control"] = "no-store"
    return response


@never_cache
@require_GET
def frontchannel_logout(request: HttpRequest, name: str) -> HttpResponse:
    """OpenID Connect Front-Channel Logout 1.0, for a provider that opted in (one without
    the back channel, such as Entra ID): its page loads this with its `iss` and the
    session's `sid`. Anyone may load it with those, so it only ends the admin sessions
    opened in that provider session; the person's grants and API tokens stay."""
    provider = provider_named(name)
    if provider is None:
        raise Http404("No such identity provider.")
    if not provider.frontchannel_logout:
        return HttpResponse(FRONTCHANNEL_OFF, status=404, content_type="text/plain")
    sid, iss = request.GET.get("sid", ""), request.GET.get("iss", "")
    try:
        issuer = discovery.metadata(provider)["issuer"]
    except ProviderUnreachable:
        return HttpResponse(
            "The provider could not be reached.", status=503, content_type="text/plain"
        )
    if not sid or iss != issuer:
        return HttpResponse(FRONTCHANNEL_PARAMETERS, status=400, content_type="text/plain")
    end_provider_session(issuer, sid)
    return HttpResponse("", status=200)
