"""Who calls the API: a member's personal access token (`Authorization: Bearer wbp_...`),
or an access token of a member's OAuth sign-in for the API (scope `api`, `wbo_...`).

Every refusal is a 401 problem saying why; an MCP API key (`wb_...`) or an OAuth token of a
sign-in for `/mcp` is refused by name: those are for `/mcp` alone. A token's
`last_used_at` is written at most once a minute.
"""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer
from oauth2_provider.models import get_access_token_model

from accounts import api_tokens
from accounts.models import ApiToken, GrantScope
from accounts.oauth_callers import is_access_token, token_checksum
from accounts.oauth_config import API_RESOURCE_METADATA_PATH
from accounts.oauth_views import public_base
from api.actor import Actor
from api.problems import MISSING_TOKEN, Problem
from toolboxes import keys

LAST_USED_RESOLUTION = timedelta(seconds=60)
REFUSALS = {
    "malformed_authorization": "The Authorization header must be 'Bearer <api token>'.",
    "mcp_credential": "This is a credential for /mcp (an MCP API key or an MCP OAuth token); "
    "the management API takes a personal API token (wbp_...).",
    "malformed_token": "The API token is not in the form wbp_<prefix>_<secret>.",
    "invalid_token": "The API token is not valid.",
    "revoked_token": "The API token has been revoked.",
    "expired_token": "The API token has expired.",
    "inactive_user": "The API token's owner is not active.",
    # An OAuth sign-in's access token (scope api).
    "invalid_access_token": "The access token is not valid.",
    "expired_access_token": "The access token has expired.",
    "revoked_grant": "The sign-in this access token belongs to has been revoked.",
    "inactive_member": "The signed-in user is not active.",
    "not_a_member": "The signed-in user is no longer a member of the access token's tenant.",
}


def refused(reason: str) -> Problem:
    """A 401 saying why (RFC 6750's challenge; `TokenAuth` adds where to sign in)."""
    description = REFUSALS[reason].replace('"', "'")
    return Problem(
        401,
        REFUSALS[reason],
        headers={
            "WWW-Authenticate": f'Bearer error="invalid_token", error_description="{description}"'
        },
    )


def with_metadata(problem: Problem, request: HttpRequest) -> Problem:
    """A 401's challenge names the API's protected resource metadata (RFC 9728), from
    which an OAuth client discovers how to sign a member in (scope api)."""
    url = public_base(request) + API_RESOURCE_METADATA_PATH
    challenge = problem.headers.get("WWW-Authenticate", "Bearer")
    separator = " " if challenge == "Bearer" else ", "
    problem.headers["WWW-Authenticate"] = f'{challenge}{separator}resource_metadata="{url}"'
    return problem


def token_from(request: HttpRequest) -> str:
    authorization = request.headers.get("Authorization", "").strip()
    if not authorization:
        if request.headers.get("X-API-Key", "").strip():
            raise refused("mcp_credential")
        raise Problem(401, MISSING_TOKEN, headers={"WWW-Authenticate": "Bearer"})
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise refused("malformed_authorization")
    return value.strip()


def oauth_actor(token: str) -> Actor:
    """The member of an OAuth sign-in for the API, acting in the tenant chosen at consent."""
    access = (
        get_access_token_model()
        .objects.filter(token_checksum=token_checksum(token), workbench_link__isnull=False)
        .select_related("workbench_link__grant__user")
        .first()
    )
    if access is None:
        raise refused("invalid_access_token")
    grant = access.workbench_link.grant
    if grant.scope != GrantScope.API:
        raise refused("mcp_credential")
    if access.expires <= timezone.now():
        raise refused("expired_access_token")
    refusal = grant.refusal()
    if refusal:
        raise refused("inactive_member" if refusal == "inactive_user" else refusal)
    return Actor(grant.user, grant=grant)


def actor_for(token: str) -> Actor:
    if is_access_token(token):
        return oauth_actor(token)
    if keys.API_KEY.parse_prefix(token) is not None:
        raise refused("mcp_credential")
    prefix = api_tokens.API_TOKEN.parse_prefix(token)
    if prefix is None:
        raise refused("malformed_token")
    record = ApiToken.objects.select_related("user", "tenant").filter(prefix=prefix).first()
    if record is None or not api_tokens.API_TOKEN.matches(token, record.token_hash):
        raise refused("invalid_token")
    # Past this point the caller holds the real token: saying why it fails leaks nothing.
    if record.revoked_at is not None:
        raise refused("revoked_token")
    now = timezone.now()
    if record.expires_at <= now:
        raise refused("expired_token")
    if not record.user.is_active:
        raise refused("inactive_user")
    if record.last_used_at is None or now - record.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=record.pk).update(last_used_at=now)
    return Actor(record.user, token=record)


class TokenAuth(HttpBearer):
    """The API's one security scheme (named in the OpenAPI document)."""

    openapi_description = (
        "A personal API token (wbp_...), made in the admin or by create_api_token."
    )

    def __call__(self, request: HttpRequest) -> Actor:
        try:
            actor = actor_for(token_from(request))
        except Problem as problem:
            raise with_metadata(problem, request) from None
        request.user = actor.user  # roles and history act as the token's owner
        return actor

    def authenticate(self, request: HttpRequest, token: str) -> Actor:  # pragma: no cover
        return actor_for(token)
