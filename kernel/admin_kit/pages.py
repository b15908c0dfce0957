"""The admin's own pages, one way for all: a page inside the admin's layout, the URL of a
view of one object (or of a model's list), the object such a view is about, and the
confirm-and-act page.

Every view of one object, whatever its app, asks `object_for`: an object outside the user's
scope is missing (404, `TenantScoped.get_object`), one the user may see but not act on is
forbidden (`PermissionDenied`, Django's 403 page). Its URL is `<id>/<action>/` (a list's:
`<action>/`), named `<app>_<model>_<action>` like the admin's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.safestring import SafeString

CONFIRM_TEMPLATE = "admin/confirm_action.html"


def page(
    model_admin: admin.ModelAdmin, request: HttpRequest, template: str, title: str, **extra: Any
) -> TemplateResponse:
    """One of an app's own admin pages, inside the admin's layout."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": model_admin.opts,
        **extra,
    }
    return TemplateResponse(request, template, context)


def object_view_url(
    model_admin: admin.ModelAdmin, action: str, view: Callable[..., HttpResponse]
) -> URLPattern:
    """`<id>/<action>/` for a staff-only view of one object, named `<app>_<model>_<action>`."""
    name = f"{model_admin.opts.app_label}_{model_admin.opts.model_name}_{action}"
    return path(f"<int:object_id>/{action}/", model_admin.admin_site.admin_view(view), name=name)


def list_view_url(
    model_admin: admin.ModelAdmin, action: str, view: Callable[..., HttpResponse]
) -> URLPattern:
    """`<action>/` for a staff-only view of a model's list, named `<app>_<model>_<action>`."""
    name = f"{model_admin.opts.app_label}_{model_admin.opts.model_name}_{action}"
    return path(f"{action}/", model_admin.admin_site.admin_view(view), name=name)


def change_url(obj: Any) -> str:
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])


def object_for(
    model_admin: Any,
    request: HttpRequest,
    object_id: int,
    may: Callable[[HttpRequest, Any], bool] | None = None,
) -> Any:
    """The object of a view: out of scope 404, then 403 unless `may` (by default: may the
    user change it)."""
    obj = model_admin.get_object_or_404(request, object_id)
    allowed = (
        may(request, obj) if may is not None else model_admin.has_change_permission(request, obj)
    )
    if not allowed:
        raise PermissionDenied
    return obj


def confirm_and_act(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    obj: Any,
    *,
    verb: str,
    done: str,
    act: Callable[[], None],
    question: SafeString,
) -> HttpResponse:
    """GET: ask `question` ("<verb> <obj>?" as the title); POST: act, record `done` in the
    object's history, say so, and go back to the object's page."""
    back = change_url(obj)
    if request.method == "POST":
        act()
        model_admin.log_change(request, obj, done)
        model_admin.message_user(request, f"{done} {obj}.", messages.SUCCESS)
        return HttpResponseRedirect(back)
    return page(
        model_admin,
        request,
        CONFIRM_TEMPLATE,
        f"{verb} {obj}?",
        question=question,
        verb=verb,
        change_url=back,
    )
