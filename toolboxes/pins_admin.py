"""The admin's screen for pinned tool definitions: held tools per server, each with a diff
against the approved definition, approved or rejected one by one or in bulk."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import F, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.html import format_html

from accounts.roles import ADMIN, ROLES, is_operator, tenant_ids
from toolboxes import pins
from toolboxes.pins import ToolPin


class StatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("held", "held (waiting)"), ("rejected", "rejected"), ("approved", "approved")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ToolPin]) -> QuerySet[ToolPin]:
        value = self.value()
        if value == "approved":
            return queryset.filter(offered_hash=F("approved_hash"))
        if value == "rejected":
            return pins.held(queryset).filter(offered_hash=F("rejected_hash"))
        if value == "held":
            return pins.held(queryset).exclude(offered_hash=F("rejected_hash"))
        return queryset


@admin.register(ToolPin)
class ToolPinAdmin(admin.ModelAdmin):
    change_form_template = "admin/toolboxes/toolpin/change_form.html"
    list_display = ["name", "server", "toolbox", "tenant", "status", "offered_at", "decided_at"]
    list_filter = [StatusFilter, "server__toolbox__tenant", "server"]
    list_select_related = ["server__toolbox__tenant"]
    search_fields = ["name", "server__name", "server__toolbox__name"]
    actions = ["approve_selected", "reject_selected"]
    fields = ["name", "server", "status", "diff", "offered_at", "decided_at", "approved_hash"]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[ToolPin]:
        queryset = super().get_queryset(request).select_related("server__toolbox__tenant")
        if is_operator(request.user):
            return queryset
        return queryset.filter(server__toolbox__tenant__in=tenant_ids(request.user, ROLES))

    def _may_decide(self, request: HttpRequest, obj: ToolPin | None = None) -> bool:
        if is_operator(request.user):
            return True
        admin_of = tenant_ids(request.user, [ADMIN])
        return bool(admin_of) if obj is None else obj.server.toolbox.tenant_id in admin_of

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_operator(request.user) or bool(tenant_ids(request.user, ROLES))

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may_decide(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a server offers its tools; nobody types them in

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="toolbox")
    def toolbox(self, obj: ToolPin) -> str:
        return obj.server.toolbox.name

    @admin.display(description="tenant")
    def tenant(self, obj: ToolPin) -> str:
        return obj.server.toolbox.tenant.slug

    @admin.display(description="changes")
    def diff(self, obj: ToolPin) -> str:
        if not obj.is_held:
            return "The offered definition is the approved one."
        return format_html('<pre class="wb-diff">{}</pre>', obj.diff())

    def _decide(self, request: HttpRequest, chosen: list[ToolPin], approve: bool) -> None:
        allowed = [pin for pin in chosen if self._may_decide(request, pin)]
        count = pins.approve(allowed) if approve else pins.reject(allowed)
        verb = "Approved" if approve else "Rejected"
        self.message_user(request, f"{verb} {count} tool definition(s).", messages.SUCCESS)

    @admin.action(description="Approve the offered definitions of the selected tools")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[ToolPin]) -> None:
        self._decide(request, list(queryset), approve=True)

    @admin.action(description="Reject the offered definitions of the selected tools")
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[ToolPin]) -> None:
        self._decide(request, list(queryset), approve=False)

    def response_change(self, request: HttpRequest, obj: ToolPin) -> HttpResponse:
        for button, approve in (("_approve", True), ("_reject", False)):
            if button in request.POST:
                self._decide(request, [obj], approve)
                return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)
