"""Tool policies in the admin: a tenant's rules (who may call which tool) and its
one-click defaults from the tools' annotations, scoped like every screen
(`TenantScoped`: another tenant's rule is 404, viewers read, a tenant's admins write).
How rules decide is `kernel.tool_policy`; each rule's row says what it is in the words of
the decision's explanation."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern, reverse
from django.utils.http import urlencode

from kernel.admin_kit.pages import list_view_url, page
from kernel.admin_kit.scoping import TenantScoped
from kernel.roles import ADMIN, can_view, is_operator, tenant_ids
from toolboxes import policies
from toolboxes.models import PolicyDefaults, Tenant, ToolPin, ToolPolicy


def tool_policy_context(pin: ToolPin) -> dict[str, Any]:
    """A tool's page: its decision for a member of each role, and the link to "who may
    call this" for every member and key."""
    server = pin.server
    tenant = server.toolbox.tenant
    asked = {"toolbox": server.toolbox.name, "server": server.name, "tool": pin.name}
    destructive = policies.claims_destructive(tenant, **asked)
    verdicts = policies.who_may_call(tenant, destructive=destructive, **asked)
    query = urlencode({"tenant": tenant.pk, **asked})
    return {
        "role_verdicts": [verdict for verdict in verdicts if verdict.kind == "role"],
        "who_url": f"{reverse('admin:toolboxes_toolpolicy_who')}?{query}",
    }


@admin.register(ToolPolicy)
class ToolPolicyAdmin(TenantScoped, admin.ModelAdmin):
    list_display = ["scope", "for_whom", "effect", "tenant", "updated_at"]
    list_filter = ["tenant", "toolbox", "effect", "subject"]
    list_select_related = ["tenant", "toolbox", "person", "api_key"]
    search_fields = ["toolbox__name", "server", "tool", "group", "role", "person__username"]
    fieldsets = [
        (None, {"fields": ["tenant", "effect"]}),
        (
            "Where",
            {
                "fields": ["toolbox", "server", "tool"],
                "description": "Leave a part empty for all: every toolbox, every server of "
                "the toolbox, every tool. The most specific rule wins (a tool's over a "
                "server's over a toolbox's over the tenant's), then the most specific "
                "subject (a key or a member over a group over a role over everyone); deny "
                "wins a tie. No rule: allowed.",
            },
        ),
        ("For whom", {"fields": ["subject", "role", "group", "person", "api_key"]}),
    ]

    change_list_template = "admin/toolboxes/toolpolicy/change_list.html"

    def get_urls(self) -> list[URLPattern]:
        return [list_view_url(self, "who", self.who_view), *super().get_urls()]

    def who_view(self, request: HttpRequest) -> HttpResponse:
        """Who may call this: for a tool (`tenant`, `toolbox`, `server`, `tool` in the
        query), the decision for each role, member and API key of the tenant, explained."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        asked = {name: request.GET.get(name, "").strip() for name in ("toolbox", "server", "tool")}
        tenants = Tenant.objects.order_by("slug")
        if not is_operator(request.user):
            tenants = tenants.filter(pk__in=tenant_ids(request.user))
        tenant = None
        if request.GET.get("tenant"):
            tenant = Tenant.objects.filter(pk=request.GET["tenant"]).first()
            if tenant is None or not can_view(request.user, tenant.pk):
                raise Http404("No tenant with this ID.")
        elif len(tenants) == 1:
            tenant = tenants[0]
        verdicts: list[policies.Verdict] = []
        destructive = False
        if tenant is not None and asked["tool"]:
            destructive = policies.claims_destructive(tenant, **asked)
            verdicts = policies.who_may_call(tenant, destructive=destructive, **asked)
        return page(
            self,
            request,
            "admin/toolboxes/toolpolicy/who.html",
            "Who may call this tool",
            tenants=tenants,
            tenant=tenant,
            asked=asked,
            destructive=destructive,
            verdicts=verdicts,
        )

    @admin.display(description="where")
    def scope(self, obj: ToolPolicy) -> str:
        return obj.as_rule().scope_text()

    @admin.display(description="for")
    def for_whom(self, obj: ToolPolicy) -> str:
        return obj.as_rule().subject_text()

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any):
        """A rule's member: one of the tenants' the user administers (the model checks the
        membership in the rule's own tenant)."""
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if db_field.name == "person" and field is not None:
            users = get_user_model()._default_manager.filter(memberships__isnull=False)
            if not is_operator(request.user):
                users = users.filter(memberships__tenant_id__in=tenant_ids(request.user, (ADMIN,)))
            field.queryset = users.distinct().order_by("username")
        return field


@admin.register(PolicyDefaults)
class PolicyDefaultsAdmin(TenantScoped, admin.ModelAdmin):
    """The tenant's defaults, one row per tenant (none: every default off)."""

    members_may = frozenset({"add", "change"})
    list_display = ["tenant", "deny_destructive_to_keys", "guard_secrets", "updated_at"]
    list_select_related = ["tenant"]
    fields = ["tenant", "deny_destructive_to_keys", "guard_secrets"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        readonly = super().get_readonly_fields(request, obj)
        return [*readonly, "tenant"] if obj is not None else readonly
