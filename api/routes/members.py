"""A tenant's members: listed (every member), invited, re-roled and removed (its admins
and operators), as the admin does it (`accounts.members`)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Schema, Status
from pydantic import Field

from accounts.members import NotAvailable, add_member, remove_member
from accounts.models import Membership, Role
from api.actor import one
from api.history import ADDITION, CHANGE, DELETION, record
from api.pages import Page, PageQuery, page
from api.problems import invalid
from api.routes.tenants import ERRORS, actor_of
from toolboxes.models import Tenant

router = Router(tags=["members"])
ALREADY_A_MEMBER = "This user is already a member of this tenant."
BASE = "/tenants/{slug}/members"


class MemberOut(Schema):
    username: str
    role: Role

    @staticmethod
    def of(membership: Membership) -> MemberOut:
        return MemberOut(username=membership.user.get_username(), role=Role(membership.role))


class MemberIn(Schema):
    username: str = Field(min_length=1, max_length=150)
    role: Role


class MemberAdded(MemberOut):
    one_time_password: str | None = Field(
        description="A new user's one-time password, shown this once (null: an existing user)."
    )


class RoleIn(Schema):
    role: Role


def membership_of(tenant: Tenant, username: str) -> Membership:
    rows = tenant.memberships.select_related("user").filter(user__username=username)
    return one(rows, "member", username)


@router.get(
    BASE,
    response={200: Page[MemberOut], **ERRORS},
    summary="List members",
    description="The tenant's members and their roles (admin or viewer), by username.",
)
def list_members(request: HttpRequest, slug: str, paging: Query[PageQuery]) -> Page[MemberOut]:
    tenant = actor_of(request).tenant(slug)
    members = tenant.memberships.select_related("user")
    return page(members, ("user__username",), paging, MemberOut.of)


@router.post(
    BASE,
    response={201: MemberAdded, **ERRORS},
    summary="Add a member",
    description=(
        "A new user is created with a one-time password, in this answer only (to be changed "
        "at the first login); only operators may add a user who exists already. 422 for a "
        "member of the tenant already."
    ),
)
def add(request: HttpRequest, slug: str, payload: MemberIn) -> Status[MemberAdded]:
    actor = actor_of(request)
    tenant = actor.tenant(slug, change=True)
    username = payload.username.strip()
    user_model = get_user_model()
    try:  # the invitation form's own checks (accounts.admin.forms.InviteForm)
        for validator in user_model._meta.get_field(user_model.USERNAME_FIELD).validators:
            validator(username)
    except ValidationError as exc:
        raise invalid([{"field": "username", "message": m} for m in exc.messages]) from None
    if tenant.memberships.filter(**{f"user__{user_model.USERNAME_FIELD}": username}).exists():
        raise invalid([{"field": "username", "message": ALREADY_A_MEMBER}])
    try:
        added = add_member(tenant, username, payload.role, attach_existing=actor.operator)
    except NotAvailable as exc:
        raise invalid([{"field": "username", "message": str(exc)}]) from None
    record(actor, added.membership, ADDITION)
    shown = MemberOut.of(added.membership)
    return Status(201, MemberAdded(**shown.model_dump(), one_time_password=added.one_time_password))


@router.patch(
    BASE + "/{username}",
    response={200: MemberOut, **ERRORS},
    summary="Change a member's role",
    description=(
        "admin (manages the tenant) or viewer (reads its configuration, never a secret, and "
        "may not use /mcp)."
    ),
)
def change_role(request: HttpRequest, slug: str, username: str, payload: RoleIn) -> MemberOut:
    actor = actor_of(request)
    membership = membership_of(actor.tenant(slug, change=True), username)
    membership.role = payload.role
    membership.full_clean()
    membership.save()
    record(actor, membership, CHANGE, fields=["role"])
    return MemberOut.of(membership)


@router.delete(
    BASE + "/{username}",
    response={204: None, **ERRORS},
    summary="Remove a member",
    description=("A user left a member of no tenant (and no operator) loses the admin login too."),
)
def remove(request: HttpRequest, slug: str, username: str) -> HttpResponse:
    actor = actor_of(request)
    membership = membership_of(actor.tenant(slug, change=True), username)
    record(actor, membership, DELETION)
    remove_member(membership)
    return HttpResponse(status=204)
