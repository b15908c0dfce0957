"""Single sign-on in the admin, for operators only: the group mapping (groups to tenants
and roles, or to the operators at a named provider), and per person where they came from
(provider, `sub`, last sign-in, groups seen, whether the provider's front-channel logout
is on) and which membership each group gave."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from accounts.models import SsoGroupMapping, SsoIdentity, SsoMembership
from accounts.sso.providers import all_providers, provider_named
from kernel.roles import is_operator

FRONTCHANNEL_ON = "on: ends the admin sessions of that provider session, nothing else"
FRONTCHANNEL_OFF = "off: its front-channel logout URL answers 404"
PROVIDER_GONE = "unknown: the provider is no longer configured"
PROVIDER_HELP = (
    "A provider's name; empty: every provider (a tenant's mapping only: a mapping to the "
    "operators must name its provider)."
)


class OperatorsOnly:
    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_operator(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_operator(request.user)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return is_operator(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_operator(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_operator(request.user)


class GroupMappingForm(forms.ModelForm):
    """The provider chosen among those configured (or every provider, for a tenant's
    mapping: the model's `clean` refuses a mapping to the operators without one)."""

    class Meta:
        model = SsoGroupMapping
        fields = ["provider", "group", "tenant", "role", "operators"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = list(all_providers())
        current = self.instance.provider
        if current and current not in names:
            names.append(current)  # a provider since removed from the settings
        self.fields["provider"] = forms.ChoiceField(
            choices=[("", "every provider"), *((name, name) for name in names)],
            required=False,
            help_text=PROVIDER_HELP,
        )


@admin.register(SsoGroupMapping)
class GroupMappingAdmin(OperatorsOnly, admin.ModelAdmin):
    form = GroupMappingForm
    list_display = ["group", "provider", "tenant", "role", "operators"]
    list_filter = ["provider", "operators", "role"]
    search_fields = ["group", "tenant__slug"]
    fields = ["provider", "group", "tenant", "role", "operators"]


class GivenMemberships(admin.TabularInline):
    model = SsoMembership
    verbose_name_plural = "memberships given by groups"
    fields = ["group", "tenant", "role"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    @admin.display(description="tenant")
    def tenant(self, obj: SsoMembership) -> str:
        return obj.membership.tenant.slug

    @admin.display(description="role")
    def role(self, obj: SsoMembership) -> str:
        return obj.membership.role

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_operator(request.user)


@admin.register(SsoIdentity)
class IdentityAdmin(OperatorsOnly, admin.ModelAdmin):
    list_display = ["user", "provider", "subject", "last_sign_in_at", "groups_seen"]
    list_filter = ["provider"]
    search_fields = ["user__username", "subject", "email"]
    list_select_related = ["user"]
    inlines = [GivenMemberships]
    fields = [
        "user",
        "provider",
        "issuer",
        "subject",
        "email",
        "groups_seen",
        "frontchannel_logout",
        "operator_from_groups",
        "created_at",
        "last_sign_in_at",
        "last_checked_at",
        "logged_out_at",
    ]
    readonly_fields = fields

    @admin.display(description="groups seen")
    def groups_seen(self, obj: SsoIdentity) -> str:
        return ", ".join(obj.groups) or "none"

    @admin.display(description="front-channel logout")
    def frontchannel_logout(self, obj: SsoIdentity) -> str:
        """The provider's setting (`frontchannel_logout` in WORKBENCH_OIDC_PROVIDERS)."""
        provider = provider_named(obj.provider)
        if provider is None:
            return PROVIDER_GONE
        return FRONTCHANNEL_ON if provider.frontchannel_logout else FRONTCHANNEL_OFF

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Deleting the record would turn the memberships its groups gave into hand-added
        ones: a person is removed by removing the user (or their groups at the provider)."""
        return False
