"""The servers a person may connect an account to: those of their tenants that need a
sign-in (their own, and for a tenant's admins the tenant's shared ones), each with its
sign-in if there is one. The admin's "Connected accounts" page and the management API
both list them from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.shortcuts import get_object_or_404

from accounts.models import Membership
from connections.models import SignIn
from kernel.roles import ADMIN
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


def entry_for(user: Any, server_id: int) -> Entry:
    """A server of the person's list: out of their tenants 404 (Http404), a shared one they
    do not administer PermissionDenied."""
    server = get_object_or_404(
        Server.objects.select_related("toolbox__tenant"),
        pk=server_id,
        toolbox__tenant__memberships__user=user,
    )
    for entry in entries(user):
        if entry.server.pk == server.pk:
            return entry
    raise PermissionDenied
