"""Connected accounts in the admin: the signed-in person's own page, "Connected accounts",
listing the servers of their tenants that need a sign-in (their own, and for a tenant's
admins the tenant's shared ones), each with Connect or Reconnect, and Disconnect (the
tokens deleted here and revoked at the vendor)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from connections import store, views
from connections.listing import entries, entry_for
from connections.models import SignIn
from connections.signals import remove_and_revoke
from kernel.admin_kit.pages import page


@admin.register(SignIn)
class SignInAdmin(admin.ModelAdmin):
    """One page, the person's own; no add or change forms (a sign-in is made at the vendor)."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[Any]:
        site = self.admin_site
        return [
            path(
                "server/<int:server_id>/disconnect/",
                site.admin_view(require_POST(self.disconnect_view)),
                name="connections_signin_disconnect",
            ),
            path("", site.admin_view(self.changelist_view), name="connections_signin_changelist"),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        """Connect is a link, one-time and the person's (as a client's): the vendor is
        another origin, which the page's form-action would not let a form reach."""
        found = entries(request.user)
        for entry in found:
            if entry.action:
                entry.link = views.connect_url(
                    request, store.new_link(request.user.pk, entry.server.pk)
                )
        return page(
            self,
            request,
            "admin/connections/signin/connected_accounts.html",
            "Connected accounts",
            entries=found,
        )

    def change_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        raise Http404

    def disconnect_view(self, request: HttpRequest, server_id: int) -> HttpResponse:
        entry = entry_for(request.user, server_id)
        if entry.sign_in is not None:
            remove_and_revoke(SignIn.objects.filter(pk=entry.sign_in.pk))
            messages.success(request, f"Disconnected from '{entry.server.name}'.")
        return HttpResponseRedirect(reverse("admin:connections_signin_changelist"))
