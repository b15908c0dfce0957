"""A user holding a one-time password may do nothing in the admin but change it; and
every page's Content-Security-Policy."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from accounts.models import OneTimePassword

FIRST_LOGIN_MESSAGE = "Choose a new password: the one you were given works only once."
_ALLOWED = ("admin:password_change", "admin:password_change_done", "admin:logout")


class OneTimePasswordMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if (
            user is not None
            and user.is_authenticated
            and request.path.startswith(reverse("admin:index"))
            and request.path not in {reverse(name) for name in _ALLOWED}
        ):
            pending = OneTimePassword.objects.filter(user=user).select_related("user").first()
            if pending is not None:
                if pending.is_pending():
                    messages.warning(request, FIRST_LOGIN_MESSAGE)
                    return HttpResponseRedirect(reverse("admin:password_change"))
                pending.delete()  # changed since: nothing left to enforce
        return self.get_response(request)


# Every page of the site (the admin, the sign-in and consent pages) loads scripts only from
# its own files: Django's admin and Workbench's pages have no inline script, and their
# constants ride on data- attributes. Inline styles stay allowed (the admin's change list
# and some of Workbench's pages use them; a style cannot run code). No framing (as
# X-Frame-Options), no plugins, forms post only here.
CONTENT_SECURITY_POLICY: dict[str, tuple[str, ...]] = {
    "default-src": ("'self'",),
    "script-src": ("'self'",),
    "style-src": ("'self'", "'unsafe-inline'"),
    "img-src": ("'self'", "data:"),
    "font-src": ("'self'",),
    "connect-src": ("'self'",),
    "object-src": ("'none'",),
    "base-uri": ("'self'",),
    "form-action": ("'self'",),
    "frame-ancestors": ("'none'",),
}
# A view whose form's answer redirects elsewhere (the OAuth consent page, to the client)
# names those origins here on its response: browsers check form-action on redirects too.
CSP_FORM_ACTION_ATTRIBUTE = "workbench_csp_form_action"


def content_security_policy(form_action: tuple[str, ...] = ()) -> str:
    directives = dict(CONTENT_SECURITY_POLICY)
    directives["form-action"] = (*directives["form-action"], *form_action)
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            extra = tuple(getattr(response, CSP_FORM_ACTION_ATTRIBUTE, ()))
            response["Content-Security-Policy"] = content_security_policy(extra)
        return response
