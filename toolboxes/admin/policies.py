"""Tool policies in the admin: a tenant's rules (who may call which tool) and its
one-click defaults from the tools' annotations, scoped like every screen
(`TenantScoped`: another tenant's rule is 404, viewers read, a tenant's admins write).
How rules decide is `kernel.tool_policy`; each rule's row says what it is in the words of
the decision's explanation."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern, reverse
from django.utils.http import urlencode

from kernel import approvals
from kernel.admin_kit.pages import list_view_url, page
from kernel.admin_kit.scoping import TenantScoped
from kernel.roles import ADMIN, can_view, is_operator, tenant_ids
from toolboxes import policies
from toolboxes.models import PolicyDefaults, Tenant, ToolPin, ToolPolicy
from toolboxes.models.policies import approvers_problem


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


class PolicyForm(forms.ModelForm):
    """A rule, and its approvers checked against its tenant (a many-to-many the model's
    `clean` does not see)."""

    class Meta:
        model = ToolPolicy
        fields = "__all__"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "approval_minutes" in self.fields:  # an allow or deny rule leaves it as it is
            self.fields["approval_minutes"].required = False

    def clean_approval_minutes(self) -> int:
        minutes = self.cleaned_data.get("approval_minutes")
        return approvals.DEFAULT_MINUTES if minutes is None else minutes

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        tenant, people = cleaned.get("tenant"), list(cleaned.get("approvers") or [])
        if tenant is not None:
            problem = approvers_problem(tenant, cleaned.get("effect", ""), people)
            if problem is not None:
                self.add_error("approvers", problem)
        return cleaned


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
        (
            "Approval (ask rules)",
            {
                "fields": ["approval_minutes", "self_approval", "approvers"],
                "description": "An ask rule lists the tool as usual and holds each call until "
                "a person approves that exact call (its arguments) on Workbench's approval "
                "page: one of the tenant's admins, a named approver, or the caller in person "
                "where allowed. Approved, the call runs once.",
            },
        ),
    ]
    form = PolicyForm

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
            field.queryset = _members(request)
        return field

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any):
        """An ask rule's approvers: as a rule's member (the form checks the rule's tenant)."""
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        if db_field.name == "approvers" and field is not None:
            field.queryset = _members(request)
        return field


def _members(request: HttpRequest) -> Any:
    """The people a rule may name: members of the tenants the user administers."""
    users = get_user_model()._default_manager.filter(memberships__isnull=False)
    if not is_operator(request.user):
        users = users.filter(memberships__tenant_id__in=tenant_ids(request.user, (ADMIN,)))
    return users.distinct().order_by("username")


class DefaultsForm(forms.ModelForm):
    """The defaults, with the webhook's signing secret write-only: never shown, kept when
    left empty."""

    approval_webhook_secret = forms.CharField(
        label="webhook signing secret",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Signs each POST (the Workbench-Signature header, HMAC-SHA256 of the "
        "timestamp and the body); encrypted at rest, never shown again. Empty: the current "
        "one is kept.",
    )

    class Meta:
        model = PolicyDefaults
        fields = "__all__"

    def clean_approval_webhook_secret(self) -> str:
        typed = self.cleaned_data.get("approval_webhook_secret") or ""
        return typed or (self.instance.approval_webhook_secret if self.instance.pk else "")


@admin.register(PolicyDefaults)
class PolicyDefaultsAdmin(TenantScoped, admin.ModelAdmin):
    """The tenant's defaults, one row per tenant (none: every default off)."""

    members_may = frozenset({"add", "change"})
    list_display = [
        "tenant",
        "deny_destructive_to_keys",
        "ask_destructive",
        "guard_secrets",
        "updated_at",
    ]
    list_select_related = ["tenant"]
    fields = [
        "tenant",
        "deny_destructive_to_keys",
        "ask_destructive",
        "guard_secrets",
        "approval_webhook_url",
        "approval_webhook_secret",
    ]
    form = DefaultsForm

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        """A reader sees whether a signing secret is set, never the secret."""
        fields = list(super().get_fields(request, obj))
        if obj is not None and not self.has_change_permission(request, obj):
            return [
                name if name != "approval_webhook_secret" else "webhook_secret" for name in fields
            ]
        return fields

    @admin.display(description="webhook signing secret")
    def webhook_secret(self, obj: PolicyDefaults) -> str:
        return "set" if obj.approval_webhook_secret else "not set"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        readonly = super().get_readonly_fields(request, obj)
        if obj is not None and not self.has_change_permission(request, obj):
            return [*readonly, *self.fields, "webhook_secret"]
        return [*readonly, "tenant"] if obj is not None else readonly
