"""The admin site: Django's, with Workbench's own sections first, its home a dashboard,
usage in the menu and held tools counted where the admin works.

Django lists an admin's apps alphabetically, which put "Authentication and Authorization",
"Axes" and "Django OAuth Toolkit" above Workbench's own; a new admin looks for tenants,
toolboxes and keys first. Installed as the default site (`WorkbenchAdminConfig`, in
INSTALLED_APPS in place of `django.contrib.admin`), so `admin.site` is this one.

The home page (`index`) is the dashboard (`workbench_site.dashboard`) above the usual list
of models; the menu (every page's sidebar, and the home page's list) gains "Usage" under
the call log, "Tool definitions" says how many wait for an admin and "Approvals" how many
held calls wait for a person.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

OWN_APPS = ("toolboxes", "accounts", "calls")  # in this order, above every other app


class WorkbenchAdminSite(admin.AdminSite):
    index_template = "admin/workbench/dashboard.html"

    def get_app_list(
        self, request: HttpRequest, app_label: str | None = None
    ) -> list[dict[str, Any]]:
        rank = {label: index for index, label in enumerate(OWN_APPS)}
        apps = super().get_app_list(request, app_label)
        for app in apps:
            if app["app_label"] == "calls":
                _add_usage(app)
                _count_waiting(request, app)
            if app["app_label"] == "toolboxes":
                _count_held(request, app)
        # A stable sort: the other apps keep Django's alphabetical order.
        return sorted(apps, key=lambda app: rank.get(app["app_label"], len(OWN_APPS)))

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        from workbench_site.dashboard import build  # the apps' models: loaded by now

        # Live counts: never cached (the admin's own never_cache says so already).
        return super().index(request, {**(extra_context or {}), "board": build(request.user)})


def _add_usage(app: dict[str, Any]) -> None:
    """ "Usage" under the call log, for those who read it."""
    log = next((m for m in app["models"] if m["object_name"] == "CallRecord"), None)
    if log is None:
        return
    try:
        url = reverse("admin:calls_callrecord_usage")
    except NoReverseMatch:  # pragma: no cover - registered with the call log's admin
        return
    usage = {
        "model": None,
        "name": "Usage",
        "object_name": "Usage",
        "perms": {"view": True},
        "admin_url": url,
        "add_url": None,
        "view_only": True,
    }
    app["models"].insert(app["models"].index(log) + 1, usage)


def _count_held(request: HttpRequest, app: dict[str, Any]) -> None:
    """ "Tool definitions (2 held)": tools waiting for an admin, in the user's tenants."""
    entry = next((m for m in app["models"] if m["object_name"] == "ToolPin"), None)
    if entry is None:
        return
    from kernel.roles import is_operator, tenant_ids
    from toolboxes.pins import waiting

    pins = waiting()
    if not is_operator(request.user):
        pins = pins.filter(server__toolbox__tenant__in=tenant_ids(request.user))
    count = pins.count()
    if count:
        entry["name"] = f"{entry['name']} ({count} held)"


def _count_waiting(request: HttpRequest, app: dict[str, Any]) -> None:
    """ "Approvals (2 waiting)": held calls a person may still decide, in the user's
    tenants, so that approvers see them wherever they are in the admin."""
    entry = next((m for m in app["models"] if m["object_name"] == "Approval"), None)
    if entry is None:
        return
    from calls.approvals import waiting
    from kernel.roles import is_operator, tenant_ids

    held = waiting()
    if not is_operator(request.user):
        held = held.filter(tenant__in=tenant_ids(request.user))
    count = held.count()
    if count:
        entry["name"] = f"{entry['name']} ({count} waiting)"


class WorkbenchAdminConfig(AdminConfig):
    default_site = "workbench_site.admin_site.WorkbenchAdminSite"
