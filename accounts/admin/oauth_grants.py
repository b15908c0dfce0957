"""OAuth sign-ins in the admin: a member sees and revokes its own; a tenant's admins see
and revoke the tenant's; operators all. Nobody adds or edits one here (the consent page
makes them). DOT's own token and code rows are not shown: only hashes are stored."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from oauth2_provider.models import (
    get_access_token_model,
    get_grant_model,
    get_id_token_model,
    get_refresh_token_model,
)

from accounts.models import OAuthGrant
from kernel.admin_kit.pages import confirm_and_act, object_for, object_view_url
from kernel.admin_kit.scoping import TenantScoped
from kernel.roles import ADMIN, can_manage, is_operator, tenant_ids


def may_revoke(request: HttpRequest, grant: OAuthGrant) -> bool:
    return grant.user_id == request.user.pk or can_manage(request.user, grant.tenant_id)


@admin.register(OAuthGrant)
class OAuthGrantAdmin(TenantScoped, admin.ModelAdmin):
    tenant_path = "tenant"
    members_may = frozenset()  # revoked through the action or the revoke page, never edited
    list_display = [
        "client",
        "username",
        "tenant",
        "scope",
        "toolbox_names",
        "created_at",
        "status",
    ]
    list_filter = ["tenant", "scope", ("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["user", "tenant", "application"]
    search_fields = ["user__username", "application__name", "tenant__slug"]
    fields = [
        "client",
        "redirect_uris",
        "username",
        "tenant",
        "scope",
        "toolbox_names",
        "created_at",
        "status",
        "revoke_link",
    ]
    readonly_fields = fields
    actions = ["revoke_grants"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[OAuthGrant]:
        """A viewer sees only its own sign-ins; a tenant admin all of the tenant's."""
        queryset = super().get_queryset(request)
        if is_operator(request.user):
            return queryset
        return queryset.filter(
            Q(user=request.user) | Q(tenant_id__in=tenant_ids(request.user, (ADMIN,)))
        )

    @admin.display(description="client", ordering="application__name")
    def client(self, obj: OAuthGrant) -> str:
        application = obj.application
        name = application.name or application.client_id
        return f"{name} (unverified)" if application.registration_source != "manual" else name

    @admin.display(description="redirect URIs")
    def redirect_uris(self, obj: OAuthGrant) -> str:
        return obj.application.redirect_uris

    @admin.display(description="user", ordering="user__username")
    def username(self, obj: OAuthGrant) -> str:
        return obj.user.get_username()

    @admin.display(description="toolboxes")
    def toolbox_names(self, obj: OAuthGrant) -> str:
        if not obj.limited:
            return "all"
        return ", ".join(sorted(obj.toolboxes.values_list("name", flat=True))) or "(none)"

    @admin.display(description="status")
    def status(self, obj: OAuthGrant) -> str:
        return "revoked" if obj.revoked_at else "active"

    @admin.display(description="revoke")
    def revoke_link(self, obj: OAuthGrant) -> str:
        if obj.revoked_at is not None:
            return "Revoked."
        url = reverse("admin:accounts_oauthgrant_revoke", args=[obj.pk])
        return format_html('<a class="deletelink" href="{}">Revoke this sign-in…</a>', url)

    @admin.action(description="Revoke selected sign-ins")
    def revoke_grants(self, request: HttpRequest, queryset: QuerySet[OAuthGrant]) -> None:
        grants = [grant for grant in queryset if may_revoke(request, grant)]
        for grant in grants:
            grant.revoke()
        self.message_user(request, f"Revoked {len(grants)} sign-in(s).", messages.SUCCESS)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        """Not TenantScoped's (admins' tenants only): a viewer revokes its own too."""
        return admin.ModelAdmin.get_actions(self, request)

    def get_urls(self) -> list[Any]:
        return [object_view_url(self, "revoke", self.revoke_view), *super().get_urls()]

    def revoke_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        grant = object_for(self, request, object_id, may=may_revoke)  # not one's own: 404
        question = format_html(
            "Revoke <strong>{}</strong>? Its tokens stop working at once, also for sessions "
            "already open; the client must sign in again. This cannot be undone.",
            grant,
        )
        return confirm_and_act(
            self, request, grant, verb="Revoke", done="Revoked", act=grant.revoke, question=question
        )


# DOT's own admin pages would list codes and tokens (hashes only) outside any tenant's
# scope; the sign-ins above are what people manage. Operators keep DOT's client list.
for _model in (
    get_access_token_model(),
    get_refresh_token_model(),
    get_grant_model(),
    get_id_token_model(),
):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)
