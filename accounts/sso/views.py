"""The sign-in through a provider (authorization code with PKCE, `state` and `nonce` kept
in the browser's session) and its callback; the provider's logouts are `logout_views`.

A failed sign-in shows our page with one of `failures`' texts and signs nobody in; the
provider's own answer goes only to the log.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import secrets
import time
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.auth import login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from accounts.models import SsoSession
from accounts.sso import discovery, failures, group_mapping, identities, recheck
from accounts.sso.failures import SignInFailed
from accounts.sso.http import ProviderUnreachable, request_json
from accounts.sso.id_tokens import id_token_claims
from accounts.sso.providers import Provider, provider_named
from accounts.sso.sessions import SESSION_KEY, forget_ended_sessions

log = logging.getLogger("workbench.sso")

PENDING_KEY = "workbench_sso_pending"  # state -> what the callback checks
PENDING_SECONDS = 600
PENDING_MAX = 5
BACKEND = "django.contrib.auth.backends.ModelBackend"
ERROR_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _provider(name: str) -> Provider:
    provider = provider_named(name)
    if provider is None:
        raise Http404("No such identity provider.")
    return provider


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _safe_next(request: HttpRequest, target: str | None) -> str:
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("admin:index")


def failed_page(
    request: HttpRequest,
    provider: Provider | None,
    text: str,
    status: int,
    title: str = "Sign-in failed",
) -> TemplateResponse:
    context = {
        **admin.site.each_context(request),
        "is_nav_sidebar_enabled": False,  # nobody is signed in: no apps to list
        "title": title,
        "text": text,
        "login_url": reverse("admin:login"),
        "provider": provider,
    }
    return TemplateResponse(request, "accounts/sso/failed.html", context, status=status)


@never_cache
@require_GET
def start(request: HttpRequest, name: str) -> HttpResponse:
    """Send the browser to the provider, with a fresh state, nonce and PKCE challenge."""
    provider = _provider(name)
    try:
        endpoint = discovery.metadata(provider)["authorization_endpoint"]
    except ProviderUnreachable as exc:
        log.warning("sso provider unreachable", extra={"provider": name, "detail": str(exc)})
        text = failures.PROVIDER_DOWN.format(provider=provider.title)
        return failed_page(request, provider, text, 502)
    state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    verifier, challenge = _pkce()
    now = time.time()
    pending = {
        key: value
        for key, value in request.session.get(PENDING_KEY, {}).items()
        if now - value["at"] < PENDING_SECONDS
    }
    while len(pending) >= PENDING_MAX:
        pending.pop(min(pending, key=lambda key: pending[key]["at"]))
    pending[state] = {
        "provider": name,
        "nonce": nonce,
        "verifier": verifier,
        "next": _safe_next(request, request.GET.get("next")),
        "at": now,
    }
    request.session[PENDING_KEY] = pending
    query = urlencode(
        {
            "response_type": "code",
            "client_id": provider.client_id,
            "redirect_uri": _redirect_uri(request, name),
            "scope": " ".join(provider.scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            # A refresh token (for the re-check) is only issued after an explicit consent.
            **({"prompt": "consent"} if "offline_access" in provider.scopes else {}),
            **dict(provider.authorize_params),
        }
    )
    separator = "&" if "?" in endpoint else "?"
    return HttpResponseRedirect(f"{endpoint}{separator}{query}")


def _redirect_uri(request: HttpRequest, name: str) -> str:
    return request.build_absolute_uri(reverse("sso_callback", args=[name]))


def _take_pending(request: HttpRequest, name: str) -> dict[str, Any]:
    pending = dict(request.session.get(PENDING_KEY, {}))
    entry = pending.pop(request.GET.get("state", ""), None)
    request.session[PENDING_KEY] = pending  # a state is used once, whatever comes of it
    if entry is None or entry["provider"] != name or time.time() - entry["at"] > PENDING_SECONDS:
        raise SignInFailed(failures.STATE_UNKNOWN, "unknown, used or expired state")
    return entry


def _exchange(
    request: HttpRequest, provider: Provider, entry: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the ID token's claims, checked; the token endpoint's answer)."""
    metadata = discovery.metadata(provider)
    title = provider.title
    error = request.GET.get("error")
    if error:
        shown = error if ERROR_CODE.match(error) else "error"
        raise SignInFailed(failures.PROVIDER_REFUSED.format(provider=title, error=shown), error)
    iss = request.GET.get("iss")  # RFC 9207: the answer names who sent it
    if iss is not None and iss != metadata["issuer"]:
        raise SignInFailed(failures.WRONG_ISSUER.format(provider=title), f"iss {iss!r}")
    data = {
        "grant_type": "authorization_code",
        "code": request.GET.get("code", ""),
        "redirect_uri": _redirect_uri(request, provider.name),
        "code_verifier": entry["verifier"],
    }
    methods = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    kwargs: dict[str, Any] = {"data": data, "headers": {"Accept": "application/json"}}
    if "client_secret_basic" in methods:
        kwargs["auth"] = (provider.client_id, provider.client_secret)
    else:
        data.update(client_id=provider.client_id, client_secret=provider.client_secret)
    status, tokens = request_json("POST", metadata["token_endpoint"], **kwargs)
    if status != 200 or not isinstance(tokens, dict) or not tokens.get("id_token"):
        detail = f"token endpoint status {status}"
        raise SignInFailed(failures.TOKEN_REFUSED.format(provider=title), detail)
    claims = id_token_claims(provider, str(tokens["id_token"]), entry["nonce"])
    if provider.groups_claim not in claims:
        claims.update(_userinfo_groups(provider, metadata, claims, tokens))
    return claims, tokens


def _userinfo_groups(
    provider: Provider, metadata: dict[str, Any], claims: dict[str, Any], tokens: dict[str, Any]
) -> dict[str, Any]:
    """The groups from the userinfo endpoint, for providers that leave them out of the ID
    token (OpenID Connect's default for claims asked by scope): only for the same `sub`."""
    endpoint, token = metadata.get("userinfo_endpoint"), tokens.get("access_token")
    if not endpoint or not token:
        return {}
    status, info = request_json("GET", endpoint, headers={"Authorization": f"Bearer {token}"})
    if status != 200 or not isinstance(info, dict) or info.get("sub") != claims["sub"]:
        return {}
    return (
        {provider.groups_claim: info[provider.groups_claim]}
        if provider.groups_claim in info
        else {}
    )


@never_cache
@require_GET
def callback(request: HttpRequest, name: str) -> HttpResponse:
    provider = _provider(name)
    try:
        entry = _take_pending(request, name)
        claims, tokens = _exchange(request, provider, entry)
        issuer = discovery.metadata(provider)["issuer"]
        identity = identities.signed_in(provider, issuer, claims)
        recheck.store_tokens(identity, tokens)
        identity.save(update_fields=["access_token", "refresh_token"])
        group_mapping.apply(identity, identity.groups)
    except ProviderUnreachable as exc:
        log.warning("sso provider unreachable", extra={"provider": name, "detail": str(exc)})
        text = failures.PROVIDER_DOWN.format(provider=provider.title)
        return failed_page(request, provider, text, 502)
    except SignInFailed as exc:
        log.warning("sso sign-in refused", extra={"provider": name, "detail": exc.detail})
        return failed_page(request, provider, exc.text, exc.status)
    user = identity.user
    if not user.is_active:
        return failed_page(request, provider, failures.INACTIVE, 403)
    if not user.is_staff:
        text = failures.NO_TENANT.format(
            provider=provider.title,
            user=claims.get("email") or claims.get("preferred_username") or claims["sub"],
            groups=", ".join(identity.groups) or failures.NO_GROUPS,
        )
        return failed_page(request, provider, text, 403, title="No tenant for you yet")
    login(request, user, backend=BACKEND)
    forget_ended_sessions(identity)
    SsoSession.objects.create(
        identity=identity,
        session_key=request.session.session_key or "",
        sid=str(claims.get("sid") or "")[:255],
    )
    request.session[SESSION_KEY] = {"identity": identity.pk}
    log.info("sso sign-in", extra={"provider": name, "user": user.pk, "groups": identity.groups})
    return HttpResponseRedirect(entry["next"])
