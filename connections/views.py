"""A person's sign-in to a remote server: the one-time link a client was given starts it
(`connect`), the vendor sends the person back to the callback (`callback`), which checks
that the same signed-in person started it, exchanges the code and keeps the tokens. Both
need the person signed in to Workbench (the admin's login); the link and the flow are
bound to them. `client_metadata` is Workbench's Client ID Metadata Document."""

from __future__ import annotations

import logging
import re
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from accounts.models import ADMIN
from accounts.oauth_views import public_base
from connections import store, texts
from connections.models import Registration
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


@never_cache
@require_GET
def connect(request: HttpRequest, token: str) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), reverse("admin:login"))
    link = store.find_link(token)
    if link is None:
        return _refused(request, texts.LINK_INVALID)
    if link.user_id != request.user.pk:
        return _refused(request, texts.LINK_OTHER_PERSON, 403)
    if not store.take_link(link):
        return _refused(request, texts.LINK_INVALID)
    shared = launch_of(link.server).auth == AuthMode.OAUTH_SHARED
    return begin(request, link.server, shared=shared)


def begin(request: HttpRequest, server: Server, *, shared: bool) -> HttpResponse:
    """Send the person to the vendor's sign-in (a link, or the admin's Connect button)."""
    name = server.name
    membership = server.toolbox.tenant.memberships.filter(user=request.user).first()
    if membership is None:
        return _refused(request, texts.NOT_A_MEMBER.format(server=name), 403)
    launch = launch_of(server)  # a catalog-made server signs in as its entry says
    if launch.auth not in (AuthMode.OAUTH_PERSON, AuthMode.OAUTH_SHARED):
        return _refused(request, texts.NO_SIGN_IN.format(server=name))
    if shared and membership.role != ADMIN:
        return _refused(request, texts.SHARED_ADMINS_ONLY.format(server=name), 403)
    from mcp_gateway import SignInClient, SignInFailed, begin_sign_in  # the SDK: when used

    client = SignInClient(
        redirect_uri=callback_url(request),
        metadata_url=metadata_url(request),
        client_id=launch.oauth_client.get("client_id", ""),
        client_secret=launch.oauth_client.get("client_secret", ""),
        scopes=launch.oauth_scopes,
    )
    url = launch.url
    registered = store.registrations(client.redirect_uri)
    try:
        authorize_url, flow = async_to_sync(begin_sign_in)(url, client, registered)
    except SignInFailed as exc:
        logger.warning("[%s] sign-in could not start: %s (%s)", name, exc.phrase, exc.detail)
        return _page(
            request, "Sign-in failed", texts.FAILED.format(server=name, phrase=exc.phrase), 502
        )
    store.start_flow(request.user.pk, server.pk, flow, shared=shared)
    return HttpResponseRedirect(authorize_url)


@never_cache
@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), reverse("admin:login"))
    pending = store.find_flow(request.GET.get("state", ""))
    if pending is None:
        return _refused(request, texts.STATE_INVALID)
    if pending.user_id != request.user.pk:
        return _refused(request, texts.STATE_OTHER_PERSON, 403)
    if not store.take_flow(pending):
        return _refused(request, texts.STATE_INVALID)
    from mcp_gateway import SignInFailed, finish_sign_in  # the SDK: when used

    server, flow = pending.server, pending.flow
    error = request.GET.get("error")
    if error:
        code = re.sub(r"[^a-z_]", "", error)[:40] or "error"
        return _refused(request, texts.REFUSED_AT_SERVER.format(server=server.name, error=code))
    try:
        tokens = async_to_sync(finish_sign_in)(
            flow, request.GET.get("code", ""), request.GET.get("iss")
        )
    except SignInFailed as exc:
        logger.warning("[%s] sign-in failed: %s (%s)", server.name, exc.phrase, exc.detail)
        message = texts.FAILED.format(server=server.name, phrase=exc.phrase)
        return _page(request, "Sign-in failed", message, 502)
    if flow.get("new_registration"):
        Registration.objects.get_or_create(
            issuer=flow["issuer"],
            redirect_uri=flow["redirect_uri"],
            defaults={"client": flow["client"]},
        )
    store.save_sign_in(server, None if pending.shared else request.user.pk, tokens, "")
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
