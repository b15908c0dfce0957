"""The admin's tool search: what a model would find for a query among a tenant's toolboxes
(or one toolbox's), so that an admin can see which description hides a tool.

A page of the tenant and one of the toolbox (`<id>/search/?q=`), each reached from a box on
the object's own page. The answer is the gateway's (`gateway_questions.find_tools`): each
enabled server's last listing, filters and approval holds applied, ranked as
`search_tools` ranks.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from kernel.admin_kit.pages import change_url, object_for, object_view_url, page
from kernel.admin_kit.scoping import AdminMixin
from toolboxes.gateway_questions import ToolSearch, find_tools
from toolboxes.models import Tenant, Toolbox

TEMPLATE = "admin/toolboxes/tool_search.html"
SEARCH_CSS = "toolboxes/tool_search.css"
LIMIT = 10  # what `search_tools` answers when the model names no limit


def search_view(
    model_admin: admin.ModelAdmin, request: HttpRequest, object_id: int
) -> HttpResponse:
    """GET `q`: the tools found in the tenant, or in the toolbox, that the page is about
    (out of the person's tenants: 404)."""
    obj = object_for(model_admin, request, object_id, may=model_admin.has_view_permission)
    tenant, toolbox = (obj.tenant, obj) if isinstance(obj, Toolbox) else (obj, None)
    query = request.GET.get("q", "").strip()
    name = toolbox.name if toolbox else None
    found = find_tools(tenant.pk, query, name, LIMIT) if query else None
    return page(
        model_admin,
        request,
        TEMPLATE,
        f"Search the tools of {_scope(tenant, toolbox)}",
        query=query,
        may_open=f"toolbox {tenant.slug}/{toolbox.name}"
        if toolbox
        else f"every toolbox of tenant {tenant.slug}",
        search_what="toolbox" if toolbox else "tenant",
        back_url=change_url(obj),
        back_label=str(toolbox.name if toolbox else tenant.slug),
        limit=LIMIT,
        **_results(found),
    )


def _scope(tenant: Tenant, toolbox: Toolbox | None) -> str:
    return f"toolbox {tenant.slug}/{toolbox.name}" if toolbox else f"tenant {tenant.slug}"


def _results(found: ToolSearch | None) -> dict[str, Any]:
    if found is None:
        return {"searched": False, "tools": [], "not_searched": []}
    tools = [
        {
            "rank": tool.rank,
            "path": f"{tool.toolbox}/{tool.server}/{tool.name}",
            "description": tool.description,
            "server": f"{tool.toolbox}/{tool.server}",
            "server_url": reverse("admin:toolboxes_server_change", args=[tool.server_id]),
        }
        for tool in found.tools
    ]
    not_searched = [
        {
            "server": f"{server.toolbox}/{server.server}",
            "reason": server.reason,
            "check_url": reverse("admin:toolboxes_server_check", args=[server.server_id]),
        }
        for server in found.not_searched
    ]
    return {"searched": True, "tools": tools, "not_searched": not_searched}


def search_url(obj: Tenant | Toolbox) -> str:
    return reverse(f"admin:toolboxes_{obj._meta.model_name}_search", args=[obj.pk])


class ToolSearchPages(AdminMixin):
    """Mixed into the tenant's and the toolbox's ModelAdmin (after TenantScoped): the
    search page, and the box on the object's own page (`page_extras`, which an admin may
    extend with more of its page's context)."""

    def get_urls(self) -> list[Any]:
        return [object_view_url(self, "search", self.search_view), *super().get_urls()]

    def search_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return search_view(self, request, object_id)

    def page_extras(self, request: HttpRequest, obj: Tenant | Toolbox) -> dict[str, Any]:
        return {"search_action": search_url(obj)}

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        obj = self.get_object(request, object_id)  # out of scope: None (TenantScoped)
        extra = {**(extra_context or {})}
        if obj is not None:
            extra.update(self.page_extras(request, obj))
        return super().change_view(request, object_id, form_url, extra)
