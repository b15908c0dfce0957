"""Connected accounts in the admin: the signed-in person's own page, "Connected accounts",
listing the servers of their tenants that need a sign-in (their own, and for a tenant's
admins the tenant's shared ones), each with Connect or Reconnect, and Disconnect (the
tokens deleted here and revoked at the vendor)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from accounts.models import ADMIN, Membership
from connections import store, views
from connections.models import SignIn
from connections.signals import remove_and_revoke
from toolboxes.admin.pages import page
from toolboxes.launch import launch_of
from toolboxes.models import AuthMode, Server

STATUS_TEXT = {
    "connected": "connected",
    "needs_reconnect": "needs a reconnect (the server refused the sign-in)",
    None: "not connected",
}


@dataclass
class Entry:
    server: Server
    shared: bool
    sign_in: SignIn | None
    link: str = ""  # Connect or Reconnect: a one-time link of the person's

    @property
    def status(self) -> str:
        return STATUS_TEXT[self.sign_in.status if self.sign_in else None]

    @property
    def action(self) -> str:
        if self.sign_in is None:
            return "Connect"
        return "Reconnect" if self.sign_in.status != "connected" else ""


def entries(user: Any) -> list[Entry]:
    """The servers needing a sign-in in the user's tenants: theirs, and the shared ones of
    the tenants they administer."""
    roles = dict(Membership.objects.filter(user=user).values_list("tenant_id", "role"))
    modes = [AuthMode.OAUTH_PERSON, AuthMode.OAUTH_SHARED]
    servers = (
        Server.objects.filter(toolbox__tenant_id__in=roles, enabled=True)
        .filter(Q(auth__in=modes) | Q(catalog_entry__auth__in=modes))
        .select_related("toolbox__tenant", "catalog_entry")
        .order_by("toolbox__tenant__slug", "toolbox__name", "position", "pk")
    )
    found = []
    for server in servers:
        shared = launch_of(server).auth == AuthMode.OAUTH_SHARED
        if shared and roles[server.toolbox.tenant_id] != ADMIN:
            continue
        sign_in = SignIn.objects.filter(server=server, user=None if shared else user).first()
        found.append(Entry(server, shared, sign_in))
    return found


def entry_for(request: HttpRequest, server_id: int) -> Entry:
    """A server of the page: out of the person's tenants 404, a shared one they do not
    administer 403."""
    server = get_object_or_404(
        Server.objects.select_related("toolbox__tenant"),
        pk=server_id,
        toolbox__tenant__memberships__user=request.user,
    )
    for entry in entries(request.user):
        if entry.server.pk == server.pk:
            return entry
    raise PermissionDenied


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
        entry = entry_for(request, server_id)
        if entry.sign_in is not None:
            remove_and_revoke(SignIn.objects.filter(pk=entry.sign_in.pk))
            messages.success(request, f"Disconnected from '{entry.server.name}'.")
        return HttpResponseRedirect(reverse("admin:connections_signin_changelist"))
