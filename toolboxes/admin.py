"""The admins' main screen: tenants, their keys and toolboxes, servers, secrets."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Count, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from accounts.admin_scope import TenantScoped
from accounts.roles import is_operator
from toolboxes import catalog, checks
from toolboxes.check_admin import ServerChecks, check_status, check_status_plain
from toolboxes.forms import MASK, ServerForm, TenantServerForm, masked
from toolboxes.models import ApiKey, CatalogEntry, CatalogParameter, Server, Tenant, Toolbox


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
CATALOG_SERVER_FIELDS: list[Any] = ["catalog_entry", "parameter_values"]
LIMIT_FIELDS = ("memory_limit_mb", "process_limit", "cpu_limit_seconds", "open_files_limit")

# The form's help, said once per group of fields rather than under each one.
HELP_COMMAND = (
    "The program, one argument per line, its working directory and environment. "
    "Values are write-only and encrypted at rest: a stored one shows empty; leave it so "
    "to keep it, type a new one to replace it, tick remove to delete it."
)
HELP_REMOTE = "The server's http(s) URL and headers (values write-only, as for environment)."
HELP_TOOLS = (
    "Tick the tools this toolbox exposes (listed from the server's last check), or all "
    "tools, including future ones. Timeouts are in seconds; an empty idle timeout is the "
    "gateway's. Pinning holds new or changed tool definitions until an admin approves."
)
HELP_SANDBOX = (
    'Host paths the server may see, as JSON ([{"path": "/srv/data"}], "writable": true to '
    "write), its network (public addresses only, unless the allowance names more), and "
    "limits (empty: the gateway's WORKBENCH_SANDBOX_* defaults)."
)
HELP_CATALOG = (
    "A server made from a catalog entry runs what the entry says, with these parameter "
    "values. Secret values are never shown; left empty, a stored one is kept."
)


def server_fieldsets(operator: bool, status: str | None, head: list[Any]) -> list[Any]:
    """The server form grouped by what it is about; stdio and remote groups are shown by
    the transport chosen (toolboxes/static/toolboxes/server_form.js)."""
    tools = ["tool_filters", ("timeout", "idle_timeout", "pinning")]
    first = [*head, *([status] if status else [])]
    if not operator:
        return [
            (None, {"fields": [*first, ("name", "position", "enabled")]}),
            _group("Catalog entry", CATALOG_SERVER_FIELDS, HELP_CATALOG),
            _group("Tools", tools, HELP_TOOLS),
        ]
    command = [("command", "cwd"), "args", "env"]
    sandbox = [("mounts", "network"), "egress_allow", LIMIT_FIELDS]
    return [
        (None, {"fields": [*first, ("name", "position", "transport", "enabled")]}),
        _group("Command", command, HELP_COMMAND, "wb-stdio"),
        _group("Remote", ["url", "headers"], HELP_REMOTE, "wb-remote"),
        _group("Tools", tools, HELP_TOOLS),
        _group("Sandbox", sandbox, HELP_SANDBOX, "wb-stdio", "collapse"),
        _group("Catalog entry", CATALOG_SERVER_FIELDS, HELP_CATALOG, "collapse"),
    ]


def _group(title: str, fields: list[Any], help_text: str, *classes: str) -> tuple[str, Any]:
    return (title, {"classes": list(classes), "description": help_text, "fields": fields})


class ServerLayout:
    """The server form's fieldsets, by role; mixed in after TenantScoped (which masks
    secrets on read-only forms) and before the admin class."""

    head: list[Any] = []
    tail: list[Any] = []

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        inline = isinstance(self, admin.options.InlineModelAdmin)
        may_check = obj is None or self.has_change_permission(request, obj)  # type: ignore[attr-defined]
        status: str | None = "check_status" if may_check else "check_status_plain"
        if obj is None and not inline:
            status = None  # an add form: nothing to check yet
        fieldsets = server_fieldsets(is_operator(request.user), status, self.head)
        if self.tail:
            fieldsets.append((None, {"fields": self.tail}))
        return fieldsets


@admin.display(description="parameters")
def parameter_values(obj: Server) -> str:
    """Read-only forms (viewers): plain values, and secret ones masked."""
    values = {**(obj.parameters or {}), **{name: MASK for name in obj.secret_parameters or {}}}
    return ", ".join(f"{name}={value}" for name, value in sorted(values.items())) or "—"


def warn_missing_filters(
    model_admin: admin.ModelAdmin, request: HttpRequest, server: Server
) -> None:
    """A filter naming a tool the server does not offer is saved, and said."""
    missing = checks.missing_filters(server)
    if missing:
        where = f"{server.toolbox.name}/{server.name}"
        message = f"Server {where}: {checks.filter_warning(missing)}"
        model_admin.message_user(request, message, messages.WARNING)


class ServerInline(TenantScoped, ServerLayout, admin.StackedInline):
    tenant_path = "toolbox__tenant"
    secret_fields = ("env", "headers")
    model = Server
    form = ServerForm
    extra = 0
    ordering = ["position", "id"]
    show_change_link = True
    readonly_fields = ["check_status", "check_status_plain"]

    parameter_values = staticmethod(parameter_values)
    check_status = staticmethod(check_status)
    check_status_plain = staticmethod(check_status_plain)

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

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        for server in [*formset.new_objects, *(obj for obj, _ in formset.changed_objects)]:
            warn_missing_filters(self, request, server)


@admin.register(Server)
class ServerAdmin(TenantScoped, ServerLayout, ServerChecks, admin.ModelAdmin):
    tenant_path = "toolbox__tenant"
    secret_fields = ("env", "headers")
    form = ServerForm
    list_display = ["name", "toolbox", "transport", "enabled", "status", "filters", "secrets"]
    list_filter = ["transport", "enabled", "last_check_ok", "toolbox__tenant"]
    list_select_related = ["toolbox__tenant"]
    search_fields = ["name", "toolbox__name", "toolbox__tenant__slug", "command", "url"]
    readonly_fields = ["reveal", "created_at", "updated_at", "check_status", "check_status_plain"]
    head = ["toolbox"]
    tail = ["reveal", ("created_at", "updated_at")]

    parameter_values = staticmethod(parameter_values)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if not is_operator(request.user):
            kwargs["form"] = TenantServerForm
        return super().get_form(request, obj, change, **kwargs)

    def save_model(self, request: HttpRequest, obj: Server, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        warn_missing_filters(self, request, obj)

    @admin.display(description="env and headers")
    def secrets(self, obj: Server) -> str:
        return masked({**(obj.env or {}), **(obj.headers or {})})

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
        "egress_allow",
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


# Admins of their own modules: held tool definitions; API keys (hand-off, what a key sees).
from toolboxes import keys_admin, pins_admin  # noqa: E402, F401
