"""Who signed in: the identity found by the provider's issuer and `sub`, its user created
on the first sign-in. An existing user is found by e-mail only when the operator says the
provider's e-mails are verified and the ID token says this one is, and never a privileged
one (a superuser, an operator, a break-glass user): whoever controls an address at a
provider would otherwise take over the account that holds it (issue 31)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from accounts.models import SsoIdentity
from accounts.sso import failures
from accounts.sso.failures import SignInFailed
from accounts.sso.providers import Provider
from kernel.roles import OPERATORS_GROUP

USERNAME_CHARS = re.compile(r"[^\w.@+-]")


def _groups(provider: Provider, claims: dict[str, Any]) -> list[str]:
    value = claims.get(provider.groups_claim) or []
    if isinstance(value, str):
        value = [value]
    return sorted({str(group) for group in value if isinstance(group, (str, int))})


def _new_username(provider: Provider, claims: dict[str, Any]) -> str:
    User = get_user_model()
    base = claims.get("preferred_username") or claims.get("email") or claims["sub"]
    base = USERNAME_CHARS.sub("-", f"{provider.name}.{base}")[:140]
    name, suffix = base, 1
    while User.objects.filter(username=name).exists():
        suffix += 1
        name = f"{base}-{suffix}"
    return name


def _user_by_email(provider: Provider, claims: dict[str, Any]) -> Any:
    email = claims.get("email")
    if not (provider.emails_verified and email and claims.get("email_verified") is True):
        return None
    found = list(get_user_model().objects.filter(email__iexact=email)[:2])
    if len(found) != 1:
        return None
    if privileged(found[0]):
        text = failures.PRIVILEGED_EMAIL.format(provider=provider.title, email=email)
        detail = f"the verified e-mail of privileged user {found[0].pk}: not linked"
        raise SignInFailed(text, detail, status=403)
    return found[0]


def privileged(user: Any) -> bool:
    """A superuser, an operator (by group: `kernel.roles`), or a break-glass user
    (`WORKBENCH_BREAK_GLASS_USERS`: `login_form.may_use_password` lets only superusers
    among them use a password; any user named there counts here)."""
    return bool(
        user.is_superuser
        or user.get_username() in settings.WORKBENCH_BREAK_GLASS_USERS
        or user.groups.filter(name=OPERATORS_GROUP).exists()
    )


def signed_in(provider: Provider, issuer: str, claims: dict[str, Any]) -> SsoIdentity:
    """The identity for these claims (its user created or found), groups recorded."""
    User = get_user_model()
    with transaction.atomic():
        identity = (
            SsoIdentity.objects.select_for_update()
            .select_related("user")
            .filter(issuer=issuer, subject=claims["sub"])
            .first()
        )
        if identity is None:
            user = _user_by_email(provider, claims)
            if user is None:
                user = User(username=_new_username(provider, claims), email=claims.get("email", ""))
                user.set_unusable_password()
                user.save()
            identity = SsoIdentity(user=user, provider=provider.name, issuer=issuer)
            identity.subject = claims["sub"]
        identity.provider = provider.name
        identity.email = str(claims.get("email") or "")[:254]
        identity.groups = _groups(provider, claims)
        identity.last_sign_in_at = identity.last_checked_at = timezone.now()
        identity.logged_out_at = None
        identity.save()
    return identity


def groups_of(provider: Provider, claims: dict[str, Any]) -> list[str]:
    return _groups(provider, claims)
