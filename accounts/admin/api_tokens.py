"""Members' personal API tokens in the admin: each member makes and revokes their own
(operators see everyone's, to revoke one); the new token is shown once, on a hand-off
page, as a new API key is (`kernel.admin_kit.handoff`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from accounts.models import ApiToken
from accounts.models.api_tokens import DEFAULT_DAYS, MAX_DAYS
from kernel.admin_kit import handoff
from kernel.admin_kit.pages import confirm_and_act, object_for, object_view_url, page
from kernel.roles import is_operator, tenant_ids
from toolboxes.models import Tenant

# The new token waits for its own hand-off page in a slot of its own (never a key's).
HANDOFF_KIND = "api_token"
NEW_TOKEN_SESSION = handoff.session_key(HANDOFF_KIND)
LIFETIMES = [(7, "7 days"), (30, "30 days"), (DEFAULT_DAYS, "90 days"), (MAX_DAYS, "1 year")]


class ApiTokenForm(forms.ModelForm):
    expires_in_days = forms.TypedChoiceField(
        label="expires in", choices=LIFETIMES, coerce=int, initial=DEFAULT_DAYS
    )

    class Meta:
        model = ApiToken
        fields = ["name", "tenant", "read_only"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    form = ApiTokenForm
    list_display = [
        "token_prefix",
        "name",
        "owner",
        "tenant",
        "read_only",
        "status",
        "last_used_at",
        "expires_at",
    ]
    list_select_related = ["user", "tenant"]
    search_fields = ["prefix", "name"]
    actions = None

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiToken]:
        queryset = super().get_queryset(request)
        return queryset if is_operator(request.user) else queryset.filter(user=request.user)

    def _member(self, request: HttpRequest) -> bool:
        return is_operator(request.user) or bool(tenant_ids(request.user))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._member(request)

    def has_view_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        if obj is None:
            return self._member(request)
        return obj.user_id == request.user.pk or is_operator(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._member(request)

    def has_change_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        return obj is not None and self.has_view_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        return False  # revoked, not deleted: its history stays

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        if obj is None:
            return ["name", "tenant", "read_only", "expires_in_days"]
        return [
            "token_prefix", "name", "owner", "tenant", "read_only", "status",
            "created_at", "expires_at", "last_used_at", "revoked_at", "revoke_link",
        ]  # fmt: skip

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        if obj is None:
            return []
        return self.get_fields(request, obj)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any):
        if db_field.name == "tenant" and not is_operator(request.user):
            kwargs["queryset"] = Tenant.objects.filter(pk__in=tenant_ids(request.user))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description="token", ordering="prefix")
    def token_prefix(self, obj: ApiToken) -> str:
        return f"wbp_{obj.prefix}_…"

    @admin.display(description="owner", ordering="user__username")
    def owner(self, obj: ApiToken) -> str:
        return obj.user.get_username()

    @admin.display(description="status")
    def status(self, obj: ApiToken) -> str:
        return obj.status

    @admin.display(description="revoke")
    def revoke_link(self, obj: ApiToken) -> str:
        if obj.revoked_at is not None:
            return "Revoked."
        url = reverse("admin:accounts_apitoken_revoke", args=[obj.pk])
        return format_html('<a class="deletelink" href="{}">Revoke this token…</a>', url)

    # --- made for oneself, handed over once ------------------------------------------

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            return
        obj.user = request.user
        obj.expires_at = timezone.now() + timedelta(days=form.cleaned_data["expires_in_days"])
        full_token = obj.assign_new_token()  # saves it: its id is known from here on
        handoff.hold(request, HANDOFF_KIND, obj.pk, full_token)

    def response_add(
        self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None
    ) -> HttpResponse:
        """Away from the POST: reloading the next page must not make another token."""
        return HttpResponseRedirect(reverse("admin:accounts_apitoken_handoff", args=[obj.pk]))

    def handoff_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        token = object_for(self, request, object_id, may=self.has_view_permission)
        # A token is shown to its owner alone.
        mine = token.user_id == request.user.pk
        full = handoff.take(request, HANDOFF_KIND, token.pk) if mine else None
        response = page(
            self,
            request,
            "admin/accounts/apitoken/created.html",
            "API token created" if full else f"API token {token}",
            token=token,
            full_token=full,
            api_url=request.build_absolute_uri("/api/v1/"),
            change_url=reverse("admin:accounts_apitoken_change", args=[token.pk]),
        )
        response["Cache-Control"] = "no-store"
        return response

    def _get_obj_does_not_exist_redirect(self, request: HttpRequest, opts: Any, object_id: Any):
        """Another member's token is missing (404), as in every scoped admin."""
        raise Http404("No API token with this ID.")

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        """Another member's token is missing, and missing is 404 before any permission is
        asked (Django would answer 403 to its delete page, or to a POST of its form)."""
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            raise Http404("No API token with this ID.")
        return obj

    def get_object_or_404(self, request: HttpRequest, object_id: Any) -> ApiToken:
        obj: ApiToken = self.get_object(request, str(object_id))
        return obj

    def get_urls(self) -> list[Any]:
        return [
            object_view_url(self, "revoke", self.revoke_view),
            object_view_url(self, "handoff", self.handoff_view),
            *super().get_urls(),
        ]

    def revoke_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        token = object_for(self, request, object_id)
        question = format_html(
            "Revoke <strong>{}</strong> of <strong>{}</strong>? It stops working at once. "
            "This cannot be undone.",
            token,
            token.user.get_username(),
        )
        return confirm_and_act(
            self, request, token, verb="Revoke", done="Revoked", act=token.revoke, question=question
        )
