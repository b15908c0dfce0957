"""The caller's connected accounts: the servers of their tenants that need a sign-in (their
own, and for a tenant's admins the tenant's shared ones), with a one-time link to connect
and a disconnect (the tokens deleted here and revoked at the vendor). Never a token."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from api.actor import Actor, not_found
from api.history import DELETION, record
from api.problems import Problem
from api.routes.tenants import ERRORS, actor_of
from connections import store
from connections.listing import Entry, entries, entry_for
from connections.signals import remove_and_revoke
from connections.views import connect_url
from toolboxes.models import Server

router = Router(tags=["connected accounts"])
BASE = "/me/connected-accounts"
SHARED_BY_ADMINS = "Only the tenant's admins connect its shared account."


class ConnectedOut(Schema):
    server_id: int
    tenant: str
    toolbox: str
    server: str
    shared: bool = Field(description="The tenant's one account, connected by its admins.")
    status: Literal["connected", "needs_reconnect", "not_connected"]
    account: str = Field(description="The account it is connected as, when the vendor says.")
    connected_at: datetime | None

    @staticmethod
    def of(entry: Entry) -> ConnectedOut:
        sign_in = entry.sign_in
        return ConnectedOut(
            server_id=entry.server.pk,
            tenant=entry.server.toolbox.tenant.slug,
            toolbox=entry.server.toolbox.name,
            server=entry.server.name,
            shared=entry.shared,
            status=sign_in.status if sign_in else "not_connected",
            account=sign_in.account if sign_in else "",
            connected_at=sign_in.connected_at if sign_in else None,
        )


class ConnectLinkOut(Schema):
    connect_url: str = Field(description="One-time, the caller's own: open it in a browser.")


def mine(actor: Actor) -> list[Entry]:
    """The caller's list, within the tenant a narrowed credential is limited to."""
    found = entries(actor.user)
    if actor.tenant_id is not None:
        found = [entry for entry in found if entry.server.toolbox.tenant_id == actor.tenant_id]
    return found


def entry_of(actor: Actor, server_id: int) -> Entry:
    """The caller's entry: a server outside the tenants the credential sees is missing
    (404) before the caller's role there is asked (403)."""
    seen = Server.objects.filter(pk=server_id, toolbox__tenant__in=actor.tenants())
    if not seen.exists():
        raise not_found("server needing a sign-in", server_id)
    try:
        return entry_for(actor.user, server_id)
    except Http404:
        raise not_found("server needing a sign-in", server_id) from None
    except PermissionDenied:
        raise Problem(403, SHARED_BY_ADMINS) from None


@router.get(
    BASE,
    response={200: list[ConnectedOut], **ERRORS},
    tags=["me"],
    summary="List my connected accounts",
)
def list_connected(request: HttpRequest) -> list[ConnectedOut]:
    """All at once: bounded by the servers of the caller's tenants that need a sign-in."""
    return [ConnectedOut.of(entry) for entry in mine(actor_of(request))]


@router.post(
    BASE + "/{server_id}/link",
    response={201: ConnectLinkOut, **ERRORS},
    summary="Get a connect link",
)
def connect_link(request: HttpRequest, server_id: int) -> Status[ConnectLinkOut]:
    """A link that signs the caller in to that server (as `AUTH_REQUIRED`'s does)."""
    actor = actor_of(request)
    actor.may_write()
    entry = entry_of(actor, server_id)
    link = connect_url(request, store.new_link(actor.user.pk, entry.server.pk))
    return Status(201, ConnectLinkOut(connect_url=link))


@router.delete(
    BASE + "/{server_id}", response={204: None, **ERRORS}, summary="Disconnect an account"
)
def disconnect(request: HttpRequest, server_id: int) -> Status[None]:
    """Deleted here at once, revoked at the vendor once committed; nothing to do: 204."""
    actor = actor_of(request)
    actor.may_write()
    entry = entry_of(actor, server_id)
    if entry.sign_in is not None:
        with transaction.atomic():
            record(actor, entry.sign_in, DELETION, "Disconnected")
            remove_and_revoke(type(entry.sign_in).objects.filter(pk=entry.sign_in.pk))
    return Status(204, None)
