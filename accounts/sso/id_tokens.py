"""The checks of a provider's JWTs: an ID token (OpenID Connect Core §3.1.3.7) and a
logout token (Back-Channel Logout §2.6), both against the provider's published keys.

Signature first (a key the cache lacks makes `discovery.keys` fetch them again: rotation),
then issuer, audience (and `azp` when there are several), expiry with a small leeway,
then what each kind needs: the ID token's nonce; the logout token's event, `sub` or `sid`,
no nonce.
"""

from __future__ import annotations

import hmac
import time
from typing import Any

from joserfc import jwt
from joserfc.errors import BadSignatureError, DecodeError, JoseError
from joserfc.jws import extract_compact

from accounts.sso import discovery, failures
from accounts.sso.failures import SignInFailed
from accounts.sso.providers import Provider

ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"]
LEEWAY_SECONDS = 60
LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout"
LOGOUT_TOKEN_SECONDS = 300  # a logout token older than this (by iat) is refused


def signed_claims(provider: Provider, token: str) -> dict[str, Any]:
    """The token's claims once its signature verifies with one of the provider's keys."""
    title = provider.title
    try:
        header = extract_compact(token.encode()).headers()
    except (JoseError, ValueError) as exc:
        raise SignInFailed(failures.BAD_SIGNATURE.format(provider=title), str(exc)) from None
    if header.get("alg") not in ALGORITHMS:
        detail = f"alg {header.get('alg')!r}"
        raise SignInFailed(failures.BAD_SIGNATURE.format(provider=title), detail)
    key_set = discovery.keys(provider, kid=header.get("kid"))
    try:
        return dict(jwt.decode(token, key_set, algorithms=ALGORITHMS).claims)
    except (BadSignatureError, DecodeError, JoseError, ValueError) as exc:
        detail = f"{type(exc).__name__}: {exc}"
        raise SignInFailed(failures.BAD_SIGNATURE.format(provider=title), detail) from None


def _issuer_and_audience(provider: Provider, claims: dict[str, Any]) -> None:
    title = provider.title
    issuer = discovery.metadata(provider)["issuer"]
    if claims.get("iss") != issuer:
        detail = f"iss {claims.get('iss')!r}"
        raise SignInFailed(failures.WRONG_ISSUER.format(provider=title), detail)
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    wrong = provider.client_id not in audiences or (
        len(audiences) > 1 and claims.get("azp") != provider.client_id
    )
    if wrong:
        raise SignInFailed(failures.WRONG_AUDIENCE.format(provider=title), f"aud {audience!r}")


def id_token_claims(provider: Provider, token: str, nonce: str) -> dict[str, Any]:
    claims = signed_claims(provider, token)
    _issuer_and_audience(provider, claims)
    title = provider.title
    now = time.time()
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)) or exp + LEEWAY_SECONDS < now:
        raise SignInFailed(failures.EXPIRED.format(provider=title), f"exp {exp!r}")
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise SignInFailed(failures.BAD_SIGNATURE.format(provider=title), "no sub")
    got = claims.get("nonce")
    if not isinstance(got, str) or not hmac.compare_digest(got.encode(), nonce.encode()):
        raise SignInFailed(failures.NONCE_MISMATCH.format(provider=title), "nonce")
    return claims


class LogoutTokenRefused(Exception):
    """A logout token that ends nothing: the provider hears 400 and why."""


def logout_token_claims(provider: Provider, token: str) -> dict[str, Any]:
    try:
        claims = signed_claims(provider, token)
        _issuer_and_audience(provider, claims)
    except SignInFailed as exc:
        reasons = {
            failures.WRONG_AUDIENCE.format(provider=provider.title): "wrong audience",
            failures.WRONG_ISSUER.format(provider=provider.title): "wrong issuer",
        }
        reason = reasons.get(exc.text, "bad signature")
        raise LogoutTokenRefused(f"the logout token was refused: {reason}") from None
    iat = claims.get("iat")
    if not isinstance(iat, (int, float)) or abs(time.time() - iat) > LOGOUT_TOKEN_SECONDS:
        raise LogoutTokenRefused("the iat claim is missing or too old")
    exp = claims.get("exp")
    expired = not isinstance(exp, (int, float)) or exp + LEEWAY_SECONDS < time.time()
    if exp is not None and expired:
        raise LogoutTokenRefused("the logout token has expired")
    events = claims.get("events")
    if not isinstance(events, dict) or not isinstance(events.get(LOGOUT_EVENT), dict):
        raise LogoutTokenRefused("the events claim lacks the back-channel logout event")
    if "nonce" in claims:
        raise LogoutTokenRefused("a logout token must not carry a nonce")
    if not claims.get("sub") and not claims.get("sid"):
        raise LogoutTokenRefused("a logout token names a sub, a sid, or both")
    if not isinstance(claims.get("jti"), str) or not claims["jti"]:
        raise LogoutTokenRefused("the jti claim is missing")
    return claims
