"""Toolboxes and their servers in the admin: the toolbox page with its servers inline, the
server page (its check: `server_checks`), and revealing a server's secrets."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.db.models import Count, F, Func, OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode

from kernel.admin_kit.pages import object_for, object_view_url, page
from kernel.admin_kit.scoping import TenantScoped
from kernel.masking import masked
from kernel.roles import is_operator
from toolboxes import pins, server_status
from toolboxes.admin import background_checks
from toolboxes.admin.client_snippets import (
    KEY_PLACEHOLDER,
    public_url,
    toolbox_configurations,
)
from toolboxes.admin.forms import ServerForm, TenantServerForm
from toolboxes.admin.server_checks import (
    STATUS_CSS,
    STATUS_SCRIPT,
    ServerChecks,
    check_status,
    check_status_plain,
)
from toolboxes.admin.server_layout import ServerLayout, parameter_values, runs
from toolboxes.admin.tool_search import SEARCH_CSS, ToolSearchPages
from toolboxes.gateway_questions import endpoint_left_out, toolbox_endpoint
from toolboxes.models import Server, Tenant, Toolbox
from toolboxes.server_fields import SECRET_FORM_FIELDS

SHORT_TRANSPORTS = {"stdio": "stdio", "streamable-http": "HTTP", "sse": "SSE"}


def warn_missing_filters(
    model_admin: admin.ModelAdmin, request: HttpRequest, server: Server
) -> None:
    """A filter naming a tool the server does not offer is saved, and said."""
    missing = server_status.missing_filters(server)
    if missing:
        where = f"{server.toolbox.name}/{server.name}"
        message = f"Server {where}: {server_status.filter_warning(missing)}"
        model_admin.message_user(request, message, messages.WARNING)


class ServerInline(TenantScoped, ServerLayout, admin.StackedInline):
    """A toolbox's servers: a line each (what it runs, its last check, held tools, tools
    exposed), its form folded under it: a toolbox of several servers stays short, and is
    still edited and saved in one form (its server's own page has every field's help)."""

    tenant_path = "toolbox__tenant"
    secret_fields = SECRET_FORM_FIELDS
    model = Server
    form = ServerForm
    template = "admin/toolboxes/toolbox/servers_inline.html"
    extra = 0
    ordering = ["position", "id"]
    show_change_link = True
    readonly_fields = ["check_status", "check_status_plain", "runs"]

    class Media:
        js = [STATUS_SCRIPT]
        css = {"all": [STATUS_CSS]}

    parameter_values = staticmethod(parameter_values)
    runs = staticmethod(runs)
    check_status = staticmethod(check_status)
    check_status_plain = staticmethod(check_status_plain)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Server]:
        servers = super().get_queryset(request).select_related("catalog_entry")
        return server_status.with_held(servers)

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        if not is_operator(request.user):
            kwargs["form"] = TenantServerForm
        return super().get_formset(request, obj, **kwargs)


@admin.register(Toolbox)
class ToolboxAdmin(TenantScoped, ToolSearchPages, admin.ModelAdmin):
    list_display = ["name", "tenant", "description", "server_count", "held", "updated_at"]
    list_filter = ["tenant"]
    list_select_related = ["tenant"]
    search_fields = ["name", "description", "tenant__slug", "tenant__name"]
    inlines = [ServerInline]
    # Its name and its switch on one row: a toolbox page is mostly its servers (four of them
    # fit in one screen: tests/browser/test_toolbox_page_flow).
    fields = ["tenant", ("name", "offered_alone"), "description"]
    # Said in a line or two: a toolbox page is mostly its servers.
    formfield_overrides = {models.TextField: {"widget": forms.Textarea(attrs={"rows": 2})}}

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        """The switch without its help under it: the endpoint's section below the form
        says what it does (a toolbox page is mostly its servers)."""
        form = super().get_form(request, obj, change, **kwargs)
        if "offered_alone" in form.base_fields:
            form.base_fields["offered_alone"].help_text = ""
        return form

    def get_queryset(self, request: HttpRequest) -> QuerySet[Toolbox]:
        waiting = (
            pins.waiting()
            .filter(server__toolbox=OuterRef("pk"))
            .order_by()
            .values("server__toolbox")
            .annotate(n=Func(F("pk"), function="COUNT"))
            .values("n")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(server_total=Count("servers"), held_total=Subquery(waiting))
        )

    @admin.display(description="servers", ordering="server_total")
    def server_count(self, obj: Toolbox) -> int:
        return obj.server_total

    @admin.display(description="held", ordering="held_total")
    def held(self, obj: Toolbox) -> str:
        """Its servers' tools waiting for an admin, as a badge linked to them."""
        if not obj.held_total:
            return ""
        query = urlencode({"server__toolbox__id__exact": obj.pk, "status": "held"})
        return format_html(
            '<a class="wb-held-badge" href="{}?{}">{} held</a>',
            reverse("admin:toolboxes_toolpin_changelist"),
            query,
            obj.held_total,
        )

    class Media:
        css = {"all": [STATUS_CSS, SEARCH_CSS]}

    def page_extras(self, request: HttpRequest, obj: Tenant | Toolbox) -> dict[str, Any]:
        """With the toolbox's own endpoint and a client's configuration of it."""
        assert isinstance(obj, Toolbox)
        url = toolbox_endpoint(public_url(request), obj.tenant.slug, obj.name)
        return {
            **super().page_extras(request, obj),
            "endpoint_url": url,
            "endpoint_offered": obj.offered_alone,
            "endpoint_configurations": toolbox_configurations(url, KEY_PLACEHOLDER, obj.name),
            "endpoint_left_out": endpoint_left_out(obj.tenant_id, obj.name),
        }

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        saved = [*formset.new_objects, *(obj for obj, _ in formset.changed_objects)]
        for server in saved:
            warn_missing_filters(self, request, server)
        background_checks.start_after_commit(server.pk for server in saved)


@admin.register(Server)
class ServerAdmin(TenantScoped, ServerLayout, ServerChecks, admin.ModelAdmin):
    tenant_path = "toolbox__tenant"
    secret_fields = SECRET_FORM_FIELDS
    form = ServerForm
    list_display = ["name", "toolbox", "kind", "on", "status", "filters", "secrets"]
    list_filter = ["transport", "enabled", "last_check_ok", "toolbox__tenant"]
    list_select_related = ["toolbox__tenant"]
    search_fields = ["name", "toolbox__name", "toolbox__tenant__slug", "command", "url"]
    readonly_fields = [
        "reveal",
        "created_at",
        "updated_at",
        "check_status",
        "check_status_plain",
        "check_cause",
        "runs",
    ]
    head = ["toolbox"]
    tail = ["reveal", ("created_at", "updated_at")]

    parameter_values = staticmethod(parameter_values)
    runs = staticmethod(runs)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Server]:
        return server_status.with_held(super().get_queryset(request))

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if not is_operator(request.user):
            kwargs["form"] = TenantServerForm
        return super().get_form(request, obj, change, **kwargs)

    def save_model(self, request: HttpRequest, obj: Server, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        warn_missing_filters(self, request, obj)
        if not change or form.has_changed():
            background_checks.start_after_commit([obj.pk])

    @admin.display(description="on", boolean=True, ordering="enabled")
    def on(self, obj: Server) -> bool:
        return obj.enabled

    @admin.display(description="transport", ordering="transport")
    def kind(self, obj: Server) -> str:
        """The transport in a word: the list has more to show than its long names."""
        return SHORT_TRANSPORTS.get(obj.transport, obj.transport)

    @admin.display(description="secrets")
    def secrets(self, obj: Server) -> str:
        """Its env and header names, values masked."""
        return masked({**(obj.env or {}), **(obj.headers or {})})

    @admin.display(description="secrets")
    def reveal(self, obj: Server) -> str:
        if obj.pk is None or not (obj.env or obj.headers):
            return "—"
        url = reverse("admin:toolboxes_server_reveal", args=[obj.pk])
        return format_html('<a href="{}">Reveal env and header values…</a>', url)

    def get_urls(self) -> list[Any]:
        return [object_view_url(self, "reveal", self.reveal_view), *super().get_urls()]

    def reveal_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """Shows the stored values after an explicit confirmation, and records who looked."""
        server = object_for(self, request, object_id)
        revealed = request.method == "POST"
        if revealed:
            self.log_change(request, server, "Revealed secrets")
        return page(
            self,
            request,
            "admin/toolboxes/server/reveal.html",
            f"Secrets of {server.toolbox}/{server.name}",
            server=server,
            revealed=revealed,
        )
