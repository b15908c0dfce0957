"""Members in the admin: operators manage all; a tenant's admins invite, re-role and remove
its members; viewers read the list.

A new user's one-time password is handed over as a new API key is
(`kernel.admin_kit.handoff`): the add redirects to the member's hand-off page, which shows
it once."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from accounts.admin.forms import InviteForm
from accounts.members import add_member, remove_member
from accounts.models import Membership
from kernel.admin_kit import handoff
from kernel.admin_kit.pages import object_for, object_view_url, page
from kernel.admin_kit.scoping import TenantScoped
from kernel.roles import is_operator

HANDOFF_KIND = "one_time_password"


@admin.register(Membership)
class MembershipAdmin(TenantScoped, admin.ModelAdmin):
    tenant_path = "tenant"
    list_display = ["username", "tenant", "role", "created_at"]
    list_filter = ["tenant", "role"]
    list_select_related = ["user", "tenant"]
    search_fields = ["user__username", "tenant__slug", "tenant__name"]

    @admin.display(description="user", ordering="user__username")
    def username(self, obj: Membership) -> str:
        return obj.user.get_username()

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs):
        if obj is None:
            kwargs["form"] = InviteForm.for_user(request.user)
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Membership | None = None) -> list[Any]:
        if obj is None:
            return ["tenant", "username", "role"]
        return ["tenant", "username", "role", "created_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Membership | None = None):
        if obj is None:
            return []
        return ["tenant", "username", "created_at"]

    def save_model(self, request: HttpRequest, obj: Membership, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        data = form.cleaned_data
        added = add_member(
            data["tenant"],
            data["username"],
            data["role"],
            attach_existing=is_operator(request.user),
        )
        obj.pk, obj.user, obj.created_at = (
            added.membership.pk,
            added.membership.user,
            added.membership.created_at,
        )
        obj._state.adding = False
        if added.one_time_password is not None:
            handoff.hold(request, HANDOFF_KIND, obj.pk, added.one_time_password)

    def response_add(self, request: HttpRequest, obj: Membership, *args: Any) -> HttpResponse:
        """A new user: to the hand-off page, away from the POST (a reload adds nobody)."""
        if not handoff.holds(request, HANDOFF_KIND, obj.pk):
            return super().response_add(request, obj, *args)  # an existing user, attached
        return HttpResponseRedirect(reverse("admin:accounts_membership_handoff", args=[obj.pk]))

    def get_urls(self) -> list[Any]:
        return [object_view_url(self, "handoff", self.handoff_view), *super().get_urls()]

    def handoff_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        membership = object_for(self, request, object_id, may=self.has_view_permission)
        password = handoff.take(request, HANDOFF_KIND, membership.pk)
        response = page(
            self,
            request,
            "admin/accounts/membership/created.html",
            "Member added" if password else f"Member {membership.user.get_username()}",
            membership=membership,
            password=password,
            change_url=reverse("admin:accounts_membership_change", args=[membership.pk]),
            changelist_url=reverse("admin:accounts_membership_changelist"),
        )
        response["Cache-Control"] = "no-store"
        return response

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        remove_member(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Membership]) -> None:
        for membership in queryset.select_related("user"):
            remove_member(membership)
