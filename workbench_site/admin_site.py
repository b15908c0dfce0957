"""The admin site: Django's, with Workbench's own sections first on its home page.

Django lists an admin's apps alphabetically, which put "Authentication and Authorization",
"Axes" and "Django OAuth Toolkit" above Workbench's own; a new admin looks for tenants,
toolboxes and keys first. Installed as the default site (`WorkbenchAdminConfig`, in
INSTALLED_APPS in place of `django.contrib.admin`), so `admin.site` is this one.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest

OWN_APPS = ("toolboxes", "accounts", "calls")  # in this order, above every other app


class WorkbenchAdminSite(admin.AdminSite):
    def get_app_list(
        self, request: HttpRequest, app_label: str | None = None
    ) -> list[dict[str, Any]]:
        rank = {label: index for index, label in enumerate(OWN_APPS)}
        apps = super().get_app_list(request, app_label)
        # A stable sort: the other apps keep Django's alphabetical order.
        return sorted(apps, key=lambda app: rank.get(app["app_label"], len(OWN_APPS)))


class WorkbenchAdminConfig(AdminConfig):
    default_site = "workbench_site.admin_site.WorkbenchAdminSite"
