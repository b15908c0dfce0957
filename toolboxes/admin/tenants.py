"""Tenants in the admin, with their toolboxes and API keys inline."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from kernel.admin_kit.scoping import TenantScoped, declare_tenant_path
from toolboxes.admin.tool_search import SEARCH_CSS, ToolSearchPages
from toolboxes.models import ApiKey, Tenant, Toolbox

declare_tenant_path("toolboxes.Tenant", "pk")  # for admin sites without TenantAdmin


def _changelist_link(model: str, label: str, **filters: Any) -> str:
    query = "&".join(f"{name}={value}" for name, value in filters.items())
    url = reverse(f"admin:toolboxes_{model}_changelist")
    return format_html('<a href="{}?{}">{}</a>', url, query, label)


class ToolboxInline(TenantScoped, admin.TabularInline):
    model = Toolbox
    fields = ["name", "description"]
    extra = 0
    show_change_link = True


class ApiKeyInline(TenantScoped, admin.TabularInline):
    model = ApiKey
    fields = ["prefix", "label", "status", "last_used_at", "expires_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # keys are made on their own page, where the key is shown once

    @admin.display(description="status")
    def status(self, obj: ApiKey) -> str:
        return obj.status


@admin.register(Tenant)
class TenantAdmin(TenantScoped, ToolSearchPages, admin.ModelAdmin):
    tenant_path = "pk"
    # A tenant's admins change its toolboxes and keys (inlines), not the tenant itself.
    members_may = frozenset({"change"})
    operator_fields = ("slug", "name", "is_active", "max_connections")
    list_display = ["slug", "name", "is_active", "toolbox_count", "key_count", "created_at"]
    list_filter = ["is_active"]
    search_fields = ["slug", "name"]
    readonly_fields = ["created_at", "updated_at", "shortcuts"]
    fields = [
        "slug",
        "name",
        "is_active",
        "max_connections",
        "shortcuts",
        "created_at",
        "updated_at",
    ]
    inlines = [ToolboxInline, ApiKeyInline]

    class Media:
        css = {"all": [SEARCH_CSS]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tenant]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                toolbox_total=Count("toolboxes", distinct=True),
                key_total=Count("api_keys", distinct=True),
            )
        )

    @admin.display(description="toolboxes", ordering="toolbox_total")
    def toolbox_count(self, obj: Tenant) -> str:
        return _changelist_link("toolbox", str(obj.toolbox_total), tenant__id__exact=obj.pk)

    @admin.display(description="API keys", ordering="key_total")
    def key_count(self, obj: Tenant) -> str:
        return _changelist_link("apikey", str(obj.key_total), tenant__id__exact=obj.pk)

    @admin.display(description="shortcuts")
    def shortcuts(self, obj: Tenant) -> str:
        if obj.pk is None:
            return "—"
        add_key = reverse("admin:toolboxes_apikey_add") + f"?tenant={obj.pk}"
        add_toolbox = reverse("admin:toolboxes_toolbox_add") + f"?tenant={obj.pk}"
        usage = reverse("admin:calls_callrecord_usage") + f"?tenant={obj.pk}"
        calls = reverse("admin:calls_callrecord_changelist") + f"?tenant__id__exact={obj.pk}"
        return format_html(
            '<a href="{}">Create an API key</a> · <a href="{}">Add a toolbox</a> · {} · {} · '
            '<a href="{}" id="tenant-usage">Usage</a> · <a href="{}">Call log</a>',
            add_key,
            add_toolbox,
            _changelist_link("toolbox", "All toolboxes", tenant__id__exact=obj.pk),
            _changelist_link("apikey", "All keys", tenant__id__exact=obj.pk),
            usage,
            calls,
        )
