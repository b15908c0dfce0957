"""The admins' main screen: tenants, their keys and toolboxes, servers, secrets."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Count, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from accounts.admin_scope import TenantScoped
from accounts.roles import is_operator
from toolboxes import catalog
from toolboxes.forms import MASK, ApiKeyForm, ServerForm, TenantServerForm, masked
from toolboxes.models import ApiKey, CatalogEntry, CatalogParameter, Server, Tenant, Toolbox

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
class TenantAdmin(TenantScoped, admin.ModelAdmin):
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


# What a tenant admin sees of a server: the catalog entry and its parameters, never the
# command, args, cwd, mounts or raw URL (operators see those too).
TENANT_SERVER_FIELDS: list[Any] = [
    ("name", "position", "enabled"),
    "catalog_entry",
    "parameter_values",
    ("tool_filters", "timeout", "idle_timeout", "pinning"),
]
CATALOG_SERVER_FIELDS: list[Any] = ["catalog_entry", "parameter_values"]


@admin.display(description="parameters")
def parameter_values(obj: Server) -> str:
    """Read-only forms (viewers): plain values, and secret ones masked."""
    values = {**(obj.parameters or {}), **{name: MASK for name in obj.secret_parameters or {}}}
    return ", ".join(f"{name}={value}" for name, value in sorted(values.items())) or "—"


class ServerInline(TenantScoped, admin.StackedInline):
    tenant_path = "toolbox__tenant"
    secret_fields = ("env", "headers")
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
        ("tool_filters", "timeout", "idle_timeout", "pinning"),
        ("mounts", "network"),
        ("memory_limit_mb", "process_limit", "cpu_limit_seconds", "open_files_limit"),
    ]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        if is_operator(request.user):
            return [*self.fields, *CATALOG_SERVER_FIELDS]
        return TENANT_SERVER_FIELDS

    parameter_values = staticmethod(parameter_values)

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        if not is_operator(request.user):
            kwargs["form"] = TenantServerForm
        return super().get_formset(request, obj, **kwargs)


@admin.register(Toolbox)
class ToolboxAdmin(TenantScoped, admin.ModelAdmin):
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
class ServerAdmin(TenantScoped, admin.ModelAdmin):
    tenant_path = "toolbox__tenant"
    secret_fields = ("env", "headers")
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
        ("tool_filters", "timeout", "idle_timeout", "pinning"),
        ("mounts", "network"),
        ("memory_limit_mb", "process_limit", "cpu_limit_seconds", "open_files_limit"),
        "reveal",
        ("created_at", "updated_at"),
    ]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        if is_operator(request.user):
            return [*self.fields[:-2], *CATALOG_SERVER_FIELDS, *self.fields[-2:]]
        return ["toolbox", *TENANT_SERVER_FIELDS, "reveal", ("created_at", "updated_at")]

    parameter_values = staticmethod(parameter_values)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if not is_operator(request.user):
            kwargs["form"] = TenantServerForm
        return super().get_form(request, obj, change, **kwargs)

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
        server = self.get_object_or_404(request, object_id)  # another tenant's: 404
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
class ApiKeyAdmin(TenantScoped, admin.ModelAdmin):
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
        api_key = self.get_object_or_404(request, object_id)  # another tenant's: 404
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


class CatalogParameterFormSet(BaseInlineFormSet):
    """Every `{{name}}` the entry uses must be one of the parameters kept on this page."""

    def clean(self) -> None:
        super().clean()
        names = {
            form.cleaned_data["name"]
            for form in self.forms
            if form.cleaned_data.get("name") and not form.cleaned_data.get("DELETE")
        }
        missing = catalog.undeclared(self.instance, names)
        if missing:
            raise ValidationError(
                f"Declare a parameter for each placeholder: {', '.join(missing)}."
            )


class CatalogParameterInline(admin.TabularInline):
    model = CatalogParameter
    formset = CatalogParameterFormSet
    fields = ["position", "name", "description", "required", "secret", "default", "choices"]
    extra = 0
    ordering = ["position", "id"]


@admin.register(CatalogEntry)
class CatalogEntryAdmin(admin.ModelAdmin):
    """The operator's catalog; tenant members only pick entries on their servers' forms."""

    list_display = ["name", "title", "transport", "parameter_names", "server_count", "updated_at"]
    list_filter = ["transport"]
    search_fields = ["name", "title", "description"]
    inlines = [CatalogParameterInline]
    fields = [
        ("name", "title"),
        "description",
        "transport",
        ("command", "cwd"),
        "args",
        "env",
        "url",
        "headers",
        ("mounts", "network"),
        ("memory_limit_mb", "process_limit", "cpu_limit_seconds", "open_files_limit"),
        ("created_at", "updated_at"),
    ]
    readonly_fields = ["created_at", "updated_at"]
    formfield_overrides = {models.JSONField: {"widget": forms.Textarea(attrs={"rows": 2})}}

    def get_queryset(self, request: HttpRequest) -> QuerySet[CatalogEntry]:
        return (
            super()
            .get_queryset(request)
            .annotate(server_total=Count("servers", distinct=True))
            .prefetch_related("parameters")
        )

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_operator(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_operator(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_operator(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_operator(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_operator(request.user)

    @admin.display(description="parameters")
    def parameter_names(self, obj: CatalogEntry) -> str:
        return (
            ", ".join(f"{p.name}{' (secret)' if p.secret else ''}" for p in obj.parameters.all())
            or "—"
        )

    @admin.display(description="servers", ordering="server_total")
    def server_count(self, obj: CatalogEntry) -> int:
        return obj.server_total

from toolboxes import pins_admin  # noqa: E402, F401  (held tool definitions)
