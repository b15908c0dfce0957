"""The identity providers an operator configured (`WORKBENCH_OIDC_PROVIDERS`), and the
shape of the group mapping kept in settings (`WORKBENCH_OIDC_GROUP_MAPPINGS`).

A JSON list, one object per provider; a client secret may stay out of it, in
`WORKBENCH_OIDC_<NAME>_CLIENT_SECRET` (name upper-cased, `-` as `_`), so that the list
itself can live in Git. Both settings are checked when the settings load (`check`): a
typo stops the start, never the login page.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
DEFAULT_SCOPES = ("openid", "email", "profile")


@dataclass(frozen=True)
class Provider:
    name: str  # in URLs: /sso/<name>/login
    title: str  # on the button: "Sign in with <title>"
    issuer: str
    client_id: str
    client_secret: str
    scopes: tuple[str, ...] = DEFAULT_SCOPES
    groups_claim: str = "groups"
    # Only then is an existing user found by e-mail (and only an e-mail the ID token
    # says is verified): the provider lets nobody claim an address they do not own.
    emails_verified: bool = False
    # OpenID Connect Front-Channel Logout 1.0, off unless the operator opts in: its URL
    # takes an unsigned `iss` and `sid` (a sid every application of the provider sees), so
    # it only ends the admin sessions of that provider session, never a grant or a token.
    frontchannel_logout: bool = False
    # Providers without back-channel logout: re-ask the userinfo endpoint at most this
    # often (seconds) during a session; 0: never.
    recheck_seconds: int = 0
    # More parameters of the authorization request (e.g. Google's access_type=offline).
    authorize_params: tuple[tuple[str, str], ...] = ()

    @property
    def discovery_url(self) -> str:
        return self.issuer.rstrip("/") + "/.well-known/openid-configuration"


def _secret_of(name: str) -> str:
    return os.environ.get(f"WORKBENCH_OIDC_{name.upper().replace('-', '_')}_CLIENT_SECRET", "")


RESERVED_PARAMS = frozenset(
    {
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "nonce",
        "code_challenge",
        "code_challenge_method",
    }
)


def _authorize_params(where: str, value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or RESERVED_PARAMS & set(value):
        raise ImproperlyConfigured(
            f"{where}: authorize_params must be an object without the flow's own parameters."
        )
    return tuple((str(k), str(v)) for k, v in value.items())


def _flag(where: str, item: dict[str, Any], field: str) -> bool:
    """A JSON boolean, false when absent (a string such as "false" would read as true)."""
    value = item.get(field, False)
    if not isinstance(value, bool):
        raise ImproperlyConfigured(f"{where}: {field} must be true or false.")
    return value


def parse(items: list[dict[str, Any]]) -> dict[str, Provider]:
    """The providers by name; ImproperlyConfigured names the first wrong entry."""
    found: dict[str, Provider] = {}
    for index, item in enumerate(items):
        where = f"WORKBENCH_OIDC_PROVIDERS[{index}]"
        if not isinstance(item, dict):
            raise ImproperlyConfigured(f"{where} must be an object.")
        name = str(item.get("name", ""))
        if not NAME_RE.match(name):
            raise ImproperlyConfigured(f"{where}: name must match {NAME_RE.pattern}.")
        if name in found:
            raise ImproperlyConfigured(f"{where}: the name {name!r} is used twice.")
        for field in ("issuer", "client_id"):
            if not item.get(field):
                raise ImproperlyConfigured(f"{where}: {field} is required.")
        scopes = item.get("scopes") or DEFAULT_SCOPES
        if isinstance(scopes, str):
            scopes = scopes.split()
        if "openid" not in scopes:
            scopes = ("openid", *scopes)
        found[name] = Provider(
            name=name,
            title=str(item.get("title") or name),
            issuer=str(item["issuer"]).rstrip("/"),
            client_id=str(item["client_id"]),
            client_secret=str(item.get("client_secret") or _secret_of(name)),
            scopes=tuple(scopes),
            groups_claim=str(item.get("groups_claim") or "groups"),
            emails_verified=_flag(where, item, "emails_verified"),
            frontchannel_logout=_flag(where, item, "frontchannel_logout"),
            recheck_seconds=int(item.get("recheck_seconds") or 0),
            authorize_params=_authorize_params(where, item.get("authorize_params") or {}),
        )
    return found


ROLES = ("admin", "viewer")
# A group's name is the provider's to give: one without a provider would make operators of
# whoever holds a group of that name at any provider configured (issue 31).
OPERATORS_NEED_PROVIDER = "a mapping to the operators must name its provider."


def check_mappings(items: Any) -> None:
    """[{"group", "tenant" (a slug), "role"} or {"group", "operators": true, "provider"}]
    (a tenant's mapping may leave out its provider: every provider); ImproperlyConfigured
    names the first wrong entry."""
    if not isinstance(items, list):
        raise ImproperlyConfigured("WORKBENCH_OIDC_GROUP_MAPPINGS must be a JSON list.")
    for index, item in enumerate(items):
        where = f"WORKBENCH_OIDC_GROUP_MAPPINGS[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("group"), str):
            raise ImproperlyConfigured(f"{where}: an object with a group.")
        if item.get("role", "viewer") not in ROLES:
            raise ImproperlyConfigured(f"{where}: role must be admin or viewer.")
        if bool(item.get("operators")) == bool(item.get("tenant")):
            raise ImproperlyConfigured(f"{where}: map the group to a tenant or to the operators.")
        if item.get("operators") and not item.get("provider"):
            raise ImproperlyConfigured(f"{where}: {OPERATORS_NEED_PROVIDER}")


def check(providers: Any, mappings: Any) -> None:
    """Both settings, as the settings module loads (the start fails on a wrong one)."""
    if not isinstance(providers, list):
        raise ImproperlyConfigured("WORKBENCH_OIDC_PROVIDERS must be a JSON list.")
    parse(providers)
    check_mappings(mappings)


def all_providers() -> dict[str, Provider]:
    return parse(settings.WORKBENCH_OIDC_PROVIDERS)


def provider_named(name: str) -> Provider | None:
    return all_providers().get(name)


def by_issuer(issuer: str) -> list[Provider]:
    return [p for p in all_providers().values() if p.issuer == issuer.rstrip("/")]
