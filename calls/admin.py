"""The call log in the admin: read-only rows with filters and an incident-id search, and
a usage page per tenant. Tenant members see only their tenants' calls (TenantScoped)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import F, Model, OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern

from accounts.admin_scope import TenantScoped
from accounts.roles import is_operator, tenant_ids
from calls import usage
from calls.models import CallRecord, PayloadCapture
from toolboxes.admin.pages import list_view_url, page
from toolboxes.models import Tenant


@admin.register(CallRecord)
class CallRecordAdmin(TenantScoped, admin.ModelAdmin):
    tenant_path = "tenant"
    members_may = frozenset()  # members read their calls; nobody edits the log
    list_display = (
        "at",
        "tenant",
        "key_prefix",
        "client_name",
        "meta_tool",
        "toolbox",
        "server",
        "tool",
        "outcome",
        "duration_ms",
        "incident",
    )
    list_filter = (
        "tenant",
        "key",
        "outcome",
        "meta_tool",
        "server",
        "tool",
        ("at", admin.DateFieldListFilter),
    )
    # "=": an exact incident id (or key prefix) as a client reported it.
    search_fields = ("=incident", "=key_prefix", "tool", "client_name")
    date_hierarchy = "at"
    list_select_related = ("tenant",)
    show_full_result_count = False  # a count(*) over a large log is slow

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[Any]:
        return [field.name for field in CallRecord._meta.fields]

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        return [list_view_url(self, "usage", self.usage_view), *super().get_urls()]

    @staticmethod
    def busiest(tenants: QuerySet[Tenant]) -> Tenant | None:
        """The usage page's tenant when none is asked for: of those the user may see, the
        one with the latest call (each tenant's read on the log's (tenant, -at) index),
        else the first by slug."""
        latest = CallRecord.objects.filter(tenant=OuterRef("pk")).order_by("-at").values("at")
        return (
            tenants.annotate(latest_call=Subquery(latest[:1]))
            .order_by(F("latest_call").desc(nulls_last=True), "slug")
            .first()
        )

    def usage_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        tenants = Tenant.objects.order_by("slug")
        if not is_operator(request.user):
            tenants = tenants.filter(pk__in=tenant_ids(request.user))
        chosen = tenants.filter(pk=request.GET.get("tenant") or 0).first() or self.busiest(tenants)
        window = request.GET.get("window", "day")
        window = window if window in usage.WINDOWS else "day"
        stats = None
        if chosen is not None:
            stats = usage.summary(self.get_queryset(request).filter(tenant=chosen), window)
        return page(
            self,
            request,
            "admin/calls/usage.html",
            f"Usage: {chosen}" if chosen else "Usage",
            tenants=tenants,
            chosen=chosen,
            window=window,
            windows=list(usage.WINDOWS),
            stats=stats,
        )


@admin.register(PayloadCapture)
class PayloadCaptureAdmin(TenantScoped, admin.ModelAdmin):
    """Operators decide whether a tenant's arguments and results are kept."""

    tenant_path = "tenant"
    members_may = frozenset()
    list_display = ("tenant", "enabled")
