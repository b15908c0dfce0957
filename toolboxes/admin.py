"""The admins' main screen: tenants, their keys and toolboxes, servers, secrets."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from toolboxes.forms import ApiKeyForm, ServerForm, masked
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

NEW_KEY_ATTRIBUTE = "_workbench_new_api_key"


def _changelist_link(model: str, label: str, **filters: Any) -> str:
    query = "&".join(f"{name}={value}" for name, value in filters.items())
    url = reverse(f"admin:toolboxes_{model}_changelist")
    return format_html('<a href="{}?{}">{}</a>', url, query, label)


def _page(
    model_admin: admin.ModelAdmin, request: HttpRequest, template: str, title: str, **extra: Any
) -> TemplateResponse:
    """One of this app's own admin pages, inside the admin's layout."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": model_admin.opts,
        **extra,
    }
    return TemplateResponse(request, template, context)


def _object_view_url(model_admin: admin.ModelAdmin, action: str, view: Any) -> Any:
    """`<id>/<action>/` for a staff-only view of one object, named `<app>_<model>_<action>`."""
    name = f"{model_admin.opts.app_label}_{model_admin.opts.model_name}_{action}"
    return path(f"<int:object_id>/{action}/", model_admin.admin_site.admin_view(view), name=name)


class ToolboxInline(admin.TabularInline):
    model = Toolbox
    fields = ["name", "description"]
    extra = 0
    show_change_link = True


class ApiKeyInline(admin.TabularInline):
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
class TenantAdmin(admin.ModelAdmin):
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
        return format_html(
            '<a href="{}">Create an API key</a> · <a href="{}">Add a toolbox</a> · {} · {}',
            add_key,
            add_toolbox,
            _changelist_link("toolbox", "All toolboxes", tenant__id__exact=obj.pk),
            _changelist_link("apikey", "All keys", tenant__id__exact=obj.pk),
        )


class ServerInline(admin.StackedInline):
    model = Server
    form = ServerForm
    extra = 0
    ordering = ["position", "id"]
    show_change_link = True
    fields = [
        ("name", "position", "transport", "enabled"),
        ("command", "cwd"),
        "args",
        "env",
        "url",
        "headers",
        ("tool_filters", "timeout", "idle_timeout"),
    ]


@admin.register(Toolbox)
class ToolboxAdmin(admin.ModelAdmin):
    list_display = ["name", "tenant", "description", "server_count", "updated_at"]
    list_filter = ["tenant"]
    list_select_related = ["tenant"]
    search_fields = ["name", "description", "tenant__slug", "tenant__name"]
    inlines = [ServerInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Toolbox]:
        return super().get_queryset(request).annotate(server_total=Count("servers"))

    @admin.display(description="servers", ordering="server_total")
    def server_count(self, obj: Toolbox) -> int:
        return obj.server_total


@admin.register(Server)
class ServerAdmin(admin.ModelAdmin):
    form = ServerForm
    list_display = [
        "name",
        "toolbox",
        "tenant",
        "position",
        "transport",
        "enabled",
        "env_names",
        "header_names",
    ]
    list_filter = ["transport", "enabled", "toolbox__tenant"]
    list_select_related = ["toolbox__tenant"]
    search_fields = ["name", "toolbox__name", "toolbox__tenant__slug", "command", "url"]
    readonly_fields = ["reveal", "created_at", "updated_at"]
    fields = [
        "toolbox",
        ("name", "position", "transport", "enabled"),
        ("command", "cwd"),
        "args",
        "env",
        "url",
        "headers",
        ("tool_filters", "timeout", "idle_timeout"),
        "reveal",
        ("created_at", "updated_at"),
    ]

    @admin.display(description="tenant", ordering="toolbox__tenant__slug")
    def tenant(self, obj: Server) -> str:
        return obj.toolbox.tenant.slug

    @admin.display(description="env")
    def env_names(self, obj: Server) -> str:
        return masked(obj.env)

    @admin.display(description="headers")
    def header_names(self, obj: Server) -> str:
        return masked(obj.headers)

    @admin.display(description="secrets")
    def reveal(self, obj: Server) -> str:
        if obj.pk is None or not (obj.env or obj.headers):
            return "—"
        url = reverse("admin:toolboxes_server_reveal", args=[obj.pk])
        return format_html('<a href="{}">Reveal env and header values…</a>', url)

    def get_urls(self) -> list[Any]:
        return [_object_view_url(self, "reveal", self.reveal_view), *super().get_urls()]

    def reveal_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """Shows the stored values after an explicit confirmation, and records who looked."""
        server = get_object_or_404(Server.objects.select_related("toolbox__tenant"), pk=object_id)
        if not self.has_change_permission(request, server):
            return HttpResponse("Forbidden", status=403)
        revealed = request.method == "POST"
        if revealed:
            self.log_change(request, server, "Revealed secrets")
        return _page(
            self,
            request,
            "admin/toolboxes/server/reveal.html",
            f"Secrets of {server.toolbox}/{server.name}",
            server=server,
            revealed=revealed,
        )


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = [
        "key_prefix",
        "label",
        "tenant",
        "status",
        "last_used_at",
        "expires_at",
        "created_at",
    ]
    list_filter = ["tenant", ("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["tenant"]
    search_fields = ["prefix", "label", "tenant__slug", "tenant__name"]
    filter_horizontal = ["toolboxes"]
    actions = ["revoke_keys"]

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        if obj is None:
            return ["tenant", "label", "toolboxes", "expires_at"]
        return [
            "tenant",
            "key_prefix",
            "label",
            "toolboxes",
            "expires_at",
            "status",
            "created_at",
            "last_used_at",
            "revoked_at",
            "revoke_link",
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        if obj is None:
            return []
        return [
            "tenant",
            "key_prefix",
            "status",
            "created_at",
            "last_used_at",
            "revoked_at",
            "revoke_link",
        ]

    @admin.display(description="key", ordering="prefix")
    def key_prefix(self, obj: ApiKey) -> str:
        return f"wb_{obj.prefix}_…"

    @admin.display(description="status")
    def status(self, obj: ApiKey) -> str:
        return obj.status

    @admin.display(description="revoke")
    def revoke_link(self, obj: ApiKey) -> str:
        if obj.revoked_at is not None:
            return "Revoked."
        url = reverse("admin:toolboxes_apikey_revoke", args=[obj.pk])
        return format_html('<a class="deletelink" href="{}">Revoke this key…</a>', url)

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        setattr(request, NEW_KEY_ATTRIBUTE, obj.assign_new_key())

    def response_add(
        self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None
    ) -> HttpResponse:
        """Shows the new key on this response only: it is in no message, cookie or session."""
        full_key = getattr(request, NEW_KEY_ATTRIBUTE, None)
        if full_key is None:
            return super().response_add(request, obj, post_url_continue)
        response = _page(
            self,
            request,
            "admin/toolboxes/apikey/created.html",
            "API key created",
            api_key=obj,
            full_key=full_key,
            change_url=reverse("admin:toolboxes_apikey_change", args=[obj.pk]),
        )
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = queryset.revoke()
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)

    def get_urls(self) -> list[Any]:
        return [_object_view_url(self, "revoke", self.revoke_view), *super().get_urls()]

    def revoke_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        api_key = get_object_or_404(ApiKey.objects.select_related("tenant"), pk=object_id)
        if not self.has_change_permission(request, api_key):
            return HttpResponse("Forbidden", status=403)
        change_url = reverse("admin:toolboxes_apikey_change", args=[api_key.pk])
        if request.method == "POST":
            api_key.revoke()
            self.log_change(request, api_key, "Revoked")
            self.message_user(request, f"Revoked {api_key}.", messages.SUCCESS)
            return HttpResponseRedirect(change_url)
        return _page(
            self,
            request,
            "admin/toolboxes/apikey/revoke.html",
            f"Revoke {api_key}?",
            api_key=api_key,
            change_url=change_url,
        )
