"""The bounded re-check of a person at a provider that cannot tell us they left (no
back-channel logout): at most every `recheck_seconds` of the provider, the refresh token
is used (when the sign-in got one: scope `offline_access`, or the provider's own way in
`authorize_params`) and the userinfo endpoint asked with the access token it gives. A
refused refresh token, or a userinfo refusal right after a refresh, ends the person's access
(`sessions.end_access`); the groups it returns move the memberships as a sign-in does.
Without a refresh token, a refused userinfo answer ends nothing (the access token may only
have expired). A provider that cannot be reached changes nothing (logged): the next check
asks again.

Run on the person's admin requests (`RecheckMiddleware`) and, for people who only use a
connector, by `manage.py sso_recheck` (a cron job, as often as the interval).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone

from accounts.models import SsoIdentity
from accounts.sso import discovery, group_mapping
from accounts.sso.http import ProviderUnreachable, request_json
from accounts.sso.providers import Provider, provider_named
from accounts.sso.sessions import SESSION_KEY, end_access
from kernel import crypto

log = logging.getLogger("workbench.sso")

KEPT, GONE, UNKNOWN = "kept", "gone", "unknown"


def store_tokens(identity: SsoIdentity, tokens: dict[str, Any]) -> None:
    """Keep the sign-in's tokens, encrypted (saved by the caller)."""
    identity.access_token = crypto.encrypt(str(tokens.get("access_token") or ""))
    if tokens.get("refresh_token"):
        identity.refresh_token = crypto.encrypt(str(tokens["refresh_token"]))


def _refresh(provider: Provider, identity: SsoIdentity, metadata: dict[str, Any]) -> str:
    data = {"grant_type": "refresh_token", "refresh_token": crypto.decrypt(identity.refresh_token)}
    status, tokens = request_json(
        "POST",
        metadata["token_endpoint"],
        data=data,
        auth=(provider.client_id, provider.client_secret),
        headers={"Accept": "application/json"},
    )
    if status == 400 and isinstance(tokens, dict) and tokens.get("error") == "invalid_grant":
        return GONE
    if status != 200 or not isinstance(tokens, dict) or not tokens.get("access_token"):
        return UNKNOWN
    store_tokens(identity, tokens)
    return KEPT


def check(identity: SsoIdentity) -> str:
    """KEPT (groups applied), GONE (access ended) or UNKNOWN (nothing changed)."""
    provider = provider_named(identity.provider)
    if provider is None or not identity.access_token:
        return UNKNOWN
    try:
        metadata = discovery.metadata(provider)
        endpoint = metadata.get("userinfo_endpoint")
        outcome = _refresh(provider, identity, metadata) if identity.refresh_token else KEPT
        if outcome == KEPT and endpoint:
            token = crypto.decrypt(identity.access_token)
            status, claims = request_json(
                "GET", endpoint, headers={"Authorization": f"Bearer {token}"}
            )
            if status in (401, 403):
                # Without a refresh token, a refused access token may only have expired.
                outcome = GONE if identity.refresh_token else UNKNOWN
            elif status != 200 or not isinstance(claims, dict):
                outcome = UNKNOWN
            elif claims.get("sub") != identity.subject:
                outcome = GONE
            elif provider.groups_claim in claims:
                identity.groups = sorted({str(g) for g in claims[provider.groups_claim] or []})
    except ProviderUnreachable as exc:
        log.warning(
            "sso re-check unreachable", extra={"provider": provider.name, "detail": str(exc)}
        )
        outcome = UNKNOWN
    identity.last_checked_at = timezone.now()
    identity.save()
    if outcome == GONE:
        end_access(identity)
    elif outcome == KEPT:
        group_mapping.apply(identity, identity.groups)
    log.info("sso re-check", extra={"provider": provider.name, "outcome": outcome})
    return outcome


def due(identity: SsoIdentity, now: float | None = None) -> bool:
    provider = provider_named(identity.provider)
    if provider is None or provider.recheck_seconds <= 0 or identity.logged_out_at:
        return False
    checked = identity.last_checked_at.timestamp() if identity.last_checked_at else 0.0
    return (now or time.time()) - checked >= provider.recheck_seconds


class RecheckMiddleware:
    """On an admin request of a session opened through a provider that asks for re-checks:
    re-check when due; a person gone is logged out here and now."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        held = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
        if held and getattr(request, "user", None) and request.user.is_authenticated:
            identity = (
                SsoIdentity.objects.select_related("user").filter(pk=held["identity"]).first()
            )
            if identity is not None and due(identity) and check(identity) == GONE:
                logout(request)
                return HttpResponseRedirect(reverse("admin:login"))
        return self.get_response(request)
