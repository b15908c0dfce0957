"""The operator's catalog in the admin: entries and their parameters."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Count, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

from kernel.admin_kit.scoping import SHARED, declare_tenant_path
from kernel.roles import is_operator
from toolboxes.admin.forms import CatalogEntryForm
from toolboxes.models import AuthMode, CatalogEntry, CatalogParameter

# The operator's catalog is one list every tenant admin picks from.
declare_tenant_path("toolboxes.CatalogEntry", SHARED)


class CatalogParameterFormSet(BaseInlineFormSet):
    """Every `{{name}}` the entry uses must be one of the parameters kept on this page."""

    def clean(self) -> None:
        super().clean()
        names = {
            form.cleaned_data["name"]
            for form in self.forms
            if form.cleaned_data.get("name") and not form.cleaned_data.get("DELETE")
        }
        missing = self.instance.undeclared(names)
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
    """The operator's catalog; tenant members only pick entries on their servers' forms. Its
    OAuth client's values are write-only (`CatalogEntryForm`)."""

    form = CatalogEntryForm
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
        "auth",
        "oauth_client",
        "oauth_scopes",
        ("mounts", "network"),
        ("egress_allow", "host_ports"),
        ("memory_limit_mb", "process_limit", "cpu_limit_seconds", "open_files_limit"),
        ("created_at", "updated_at"),
    ]
    readonly_fields = ["created_at", "updated_at"]
    formfield_overrides = {models.JSONField: {"widget": forms.Textarea(attrs={"rows": 2})}}

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        """The sign-in is not required: a form without it (an older client) signs in with
        none, as before."""
        if db_field.name == "auth":
            return forms.TypedChoiceField(
                label="sign-in",
                choices=AuthMode.choices,
                required=False,
                empty_value=AuthMode.NONE,
                initial=AuthMode.NONE,
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_queryset(self, request: HttpRequest) -> QuerySet[CatalogEntry]:
        return (
            super()
            .get_queryset(request)
            .annotate(server_total=Count("servers", distinct=True))
            .prefetch_related("parameters")
        )

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        exposed = form.instance.exposed_secrets()
        if exposed:
            self.message_user(
                request,
                f"Secret parameters in an argument or the URL: {', '.join(exposed)}. A "
                "server's arguments are visible to the host's users (ps) and a URL's query "
                "reaches the remote server's logs: pass secrets in env or headers instead.",
                messages.WARNING,
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
