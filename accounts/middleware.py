"""A user holding a one-time password may do nothing in the admin but change it."""

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
