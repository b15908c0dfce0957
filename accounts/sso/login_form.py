"""Local passwords turned off (`WORKBENCH_LOCAL_LOGIN=false`): the admin's password form
then signs in only a break-glass superuser (`WORKBENCH_BREAK_GLASS_USERS`, or any
superuser when that list is empty). The password is checked first, through the same
throttled backend (django-axes), so the refusal tells nothing to whoever lacks it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.urls import reverse

from accounts.sso.providers import all_providers

LOCAL_LOGIN_OFF = (
    "Passwords are turned off here: sign in with your identity provider (the button above)."
)


def local_login_on() -> bool:
    return bool(settings.WORKBENCH_LOCAL_LOGIN)


def may_use_password(user: Any) -> bool:
    if local_login_on():
        return True
    allowed = settings.WORKBENCH_BREAK_GLASS_USERS
    return bool(user.is_superuser) and (not allowed or user.get_username() in allowed)


class LoginForm(AdminAuthenticationForm):
    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if not may_use_password(user):
            raise ValidationError(LOCAL_LOGIN_OFF, code="local_login_off")


def login_url() -> str:
    """Where a page that needs a signed-in person sends the browser (the OAuth consent
    page): straight to the provider when it is the only way in, else the login page."""
    providers = list(all_providers())
    if not local_login_on() and len(providers) == 1:
        return reverse("sso_login", args=providers[0:1])
    return reverse("admin:login")
