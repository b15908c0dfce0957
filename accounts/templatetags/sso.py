"""What the admin's login page offers: the providers' buttons, and the password form
unless local passwords are off (`?local=1` shows it to a break-glass superuser)."""

from __future__ import annotations

from typing import Any

from django import template

from accounts.sso.login_form import local_login_on
from accounts.sso.providers import all_providers

register = template.Library()


@register.simple_tag(takes_context=True)
def sso_login_options(context: Any) -> dict[str, Any]:
    request = context.get("request")
    asked = request is not None and (request.GET.get("local") == "1" or request.method == "POST")
    return {
        "providers": list(all_providers().values()),
        "password_form": local_login_on() or asked,
    }
