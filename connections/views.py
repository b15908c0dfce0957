"""A person's sign-in to a remote server: the one-time link a client was given starts it
(`connect`), the vendor sends the person back to the callback (`callback`), which checks
that the same signed-in person started it, exchanges the code and keeps the tokens. Both
need the person signed in to Workbench (the admin's login); the link and the flow are
bound to them. `client_metadata` is Workbench's Client ID Metadata Document."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from accounts.oauth_views import public_base
from connections import store, texts
from connections.models import PendingSignIn, Registration
from kernel.roles import ADMIN
from toolboxes.launch import launch_of
from toolboxes.models import AuthMode, Server

logger = logging.getLogger("workbench.connected")

CLIENT_NAME = "Workbench"


def connect_url(request: HttpRequest, token: str) -> str:
    return public_base(request) + reverse("connections_connect", args=[token])


def callback_url(request: HttpRequest) -> str:
    return public_base(request) + reverse("connections_callback")


def metadata_url(request: HttpRequest) -> str:
    return public_base(request) + reverse("connections_client_metadata")


def _page(request: HttpRequest, title: str, message: str, status: int) -> HttpResponse:
    context = {"title": title, "message": message, "failed": status >= 400}
    return render(request, "connections/outcome.html", context, status=status)


def _refused(request: HttpRequest, message: str, status: int = 400) -> HttpResponse:
    return _page(request, "Sign-in refused", message, status)


@dataclass(frozen=True)
class Start:
    """A sign-in ready to start: what the vendor's flow needs, and whose it is."""

    server: Server
    user_id: int
    shared: bool
    url: str
    client: Any
    registered: dict[str, dict[str, Any]]


@never_cache
@require_GET
async def connect(request: HttpRequest, token: str) -> HttpResponse:
    """Async: the vendor's discovery and registration wait on the event loop, never in the
    one thread the ORM shares with the gateway (a slow vendor must not stall it)."""
    from kernel.oauth_sign_in import SignInFailed, begin  # the SDK: when used

    start = await sync_to_async(_link_to_start)(request, token)
    if isinstance(start, HttpResponse):
        return start
    try:
        authorize_url, flow = await begin(start.url, start.client, start.registered)
    except SignInFailed as exc:
        name = start.server.name
        logger.warning("[%s] sign-in could not start: %s (%s)", name, exc.phrase, exc.detail)
        message = texts.FAILED.format(server=name, phrase=exc.phrase)
        return await sync_to_async(_page)(request, "Sign-in failed", message, 502)
    await sync_to_async(store.start_flow)(start.user_id, start.server.pk, flow, shared=start.shared)
    return HttpResponseRedirect(authorize_url)


def _link_to_start(request: HttpRequest, token: str) -> Start | HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), reverse("admin:login"))
    link = store.find_link(token)
    if link is None:
        return _refused(request, texts.LINK_INVALID)
    if link.user_id != request.user.pk:
        return _refused(request, texts.LINK_OTHER_PERSON, 403)
    if not store.take_link(link):
        return _refused(request, texts.LINK_INVALID)
    return _start(request, link.server)


def _start(request: HttpRequest, server: Server) -> Start | HttpResponse:
    """The person may sign in to the server (a member; its shared account: an admin)."""
    from kernel.oauth_sign_in import Client  # the SDK: when used

    name = server.name
    membership = server.toolbox.tenant.memberships.filter(user=request.user).first()
    if membership is None:
        return _refused(request, texts.NOT_A_MEMBER.format(server=name), 403)
    launch = launch_of(server)  # a catalog-made server signs in as its entry says
    if launch.auth not in (AuthMode.OAUTH_PERSON, AuthMode.OAUTH_SHARED):
        return _refused(request, texts.NO_SIGN_IN.format(server=name))
    shared = launch.auth == AuthMode.OAUTH_SHARED
    if shared and membership.role != ADMIN:
        return _refused(request, texts.SHARED_ADMINS_ONLY.format(server=name), 403)
    client = Client(
        redirect_uri=callback_url(request),
        metadata_url=metadata_url(request),
        client_id=launch.oauth_client.get("client_id", ""),
        client_secret=launch.oauth_client.get("client_secret", ""),
        scopes=launch.oauth_scopes,
    )
    registered = store.registrations(client.redirect_uri)
    return Start(server, request.user.pk, shared, launch.url, client, registered)


@never_cache
@require_GET
async def callback(request: HttpRequest) -> HttpResponse:
    """Async, as `connect`: the code is exchanged on the event loop."""
    from kernel.oauth_sign_in import SignInFailed, finish  # the SDK: when used

    pending = await sync_to_async(_taken_flow)(request)
    if isinstance(pending, HttpResponse):
        return pending
    server, flow = pending.server, pending.flow
    error = request.GET.get("error")
    if error:
        code = re.sub(r"[^a-z_]", "", error)[:40] or "error"
        message = texts.REFUSED_AT_SERVER.format(server=server.name, error=code)
        return await sync_to_async(_refused)(request, message)
    try:
        tokens = await finish(flow, request.GET.get("code", ""), request.GET.get("iss"))
    except SignInFailed as exc:
        logger.warning("[%s] sign-in failed: %s (%s)", server.name, exc.phrase, exc.detail)
        message = texts.FAILED.format(server=server.name, phrase=exc.phrase)
        return await sync_to_async(_page)(request, "Sign-in failed", message, 502)
    return await sync_to_async(_connected)(request, pending, tokens)


def _taken_flow(request: HttpRequest) -> PendingSignIn | HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), reverse("admin:login"))
    pending = store.find_flow(request.GET.get("state", ""))
    if pending is None:
        return _refused(request, texts.STATE_INVALID)
    if pending.user_id != request.user.pk:
        return _refused(request, texts.STATE_OTHER_PERSON, 403)
    if not store.take_flow(pending):
        return _refused(request, texts.STATE_INVALID)
    return pending


def _connected(
    request: HttpRequest, pending: PendingSignIn, tokens: dict[str, Any]
) -> HttpResponse:
    flow, server = pending.flow, pending.server
    if flow.get("new_registration"):
        Registration.objects.get_or_create(
            issuer=flow["issuer"],
            redirect_uri=flow["redirect_uri"],
            defaults={"client": flow["client"]},
        )
    account = tokens.pop("account", "")  # shown beside the sign-in, never a secret
    store.save_sign_in(server, None if pending.shared else request.user.pk, tokens, account)
    return _page(request, "Connected", texts.CONNECTED.format(server=server.name), 200)


@require_GET
def client_metadata(request: HttpRequest) -> JsonResponse:
    """Workbench's Client ID Metadata Document: its client id is this document's URL."""
    document: dict[str, Any] = {
        "client_id": metadata_url(request),
        "client_name": CLIENT_NAME,
        "redirect_uris": [callback_url(request)],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "web",
    }
    return JsonResponse(document)
