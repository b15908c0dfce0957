"""The admin's screen for pinned tool definitions: held tools per server, each with a diff
against the approved definition, approved or rejected one by one or in bulk."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Case, F, QuerySet, Value, When
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.html import format_html

from kernel.admin_kit.scoping import TenantScoped
from toolboxes import pins
from toolboxes.admin.policies import tool_policy_context
from toolboxes.models import ToolPin


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
            return pins.waiting(queryset)
        return queryset


@admin.register(ToolPin)
class ToolPinAdmin(TenantScoped, admin.ModelAdmin):
    """Members see their tenants' pins only (another tenant's is 404, list filters name only
    their own servers and tenants); a tenant's admins approve and reject, viewers read."""

    tenant_path = "server__toolbox__tenant"
    members_may = frozenset({"change"})  # deciding; a server offers its tools, none typed in
    change_form_template = "admin/toolboxes/toolpin/change_form.html"
    list_display = ["name", "where", "state", "offered_at", "decided_at"]
    list_filter = [StatusFilter, "server__toolbox__tenant", "server__toolbox", "server"]
    list_select_related = ["server__toolbox__tenant"]
    search_fields = ["name", "server__name", "server__toolbox__name"]
    actions = ["approve_selected", "reject_selected"]
    fields = ["name", "server", "status", "diff", "offered_at", "decided_at", "approved_hash"]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[ToolPin]:
        return super().get_queryset(request).select_related("server__toolbox__tenant")

    def get_ordering(self, request: HttpRequest) -> list[Any]:
        """Held tools first (waiting, then rejected, then approved): they are why an admin
        comes to this list."""
        rank = Case(
            When(offered_hash=F("approved_hash"), then=Value(2)),
            When(offered_hash=F("rejected_hash"), then=Value(1)),
            default=Value(0),
        )
        return [
            rank.asc(),
            "server__toolbox__tenant__slug",
            "server__toolbox__name",
            "server__name",
            "name",
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The tool's page shows who may call it (`admin.policies`)."""
        pin = self.get_object(request, object_id)  # out of the person's tenants: 404
        extra = {**(extra_context or {}), **tool_policy_context(pin)}
        return super().change_view(request, object_id, form_url, extra)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a server offers its tools; nobody types them in

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    class Media:
        css = {"all": ["toolboxes/server_form.css"]}

    @admin.display(description="server", ordering="server__toolbox__tenant__slug")
    def where(self, obj: ToolPin) -> str:
        """tenant/toolbox/server, in one column."""
        toolbox = obj.server.toolbox
        return f"{toolbox.tenant.slug}/{toolbox.name}/{obj.server.name}"

    @admin.display(description="status")
    def state(self, obj: ToolPin) -> str:
        """Its status, a held one as a badge: what the admin comes for."""
        status = obj.status
        if status.startswith("held"):
            return format_html('<span class="wb-held-badge">{}</span>', status)
        return status

    @admin.display(description="changes")
    def diff(self, obj: ToolPin) -> str:
        if not obj.is_held:
            return "The offered definition is the approved one."
        return format_html('<pre class="wb-diff">{}</pre>', obj.diff())

    def _decide(self, request: HttpRequest, chosen: list[ToolPin], approve: bool) -> None:
        allowed = [pin for pin in chosen if self.has_change_permission(request, pin)]
        count = pins.approve(allowed) if approve else pins.reject(allowed)
        verb = "Approved" if approve else "Rejected"
        self.message_user(request, f"{verb} {count} tool definition(s).", messages.SUCCESS)

    @admin.action(
        description="Approve the offered definitions of the selected tools", permissions=["change"]
    )
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[ToolPin]) -> None:
        self._decide(request, list(queryset), approve=True)

    @admin.action(
        description="Reject the offered definitions of the selected tools", permissions=["change"]
    )
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[ToolPin]) -> None:
        self._decide(request, list(queryset), approve=False)

    def response_change(self, request: HttpRequest, obj: ToolPin) -> HttpResponse:
        for button, approve in (("_approve", True), ("_reject", False)):
            if button in request.POST:
                self._decide(request, [obj], approve)
                return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)
