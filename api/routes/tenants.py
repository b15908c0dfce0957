"""Who am I, and tenants (every member reads its own; operators make and change them)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Status

from api.actor import Actor
from api.history import ADDITION, CHANGE, record
from api.pages import Page, PageQuery, page
from api.problems import Problem, ProblemOut
from api.schemas import TenantIn, TenantOut, TenantPatch, TokenOut, WhoAmI
from kernel.roles import roles_of
from toolboxes.models import Tenant

router = Router(tags=["tenants"])
ERRORS = {
    400: ProblemOut,
    401: ProblemOut,
    403: ProblemOut,
    404: ProblemOut,
    422: ProblemOut,
    429: ProblemOut,
}


def actor_of(request: HttpRequest) -> Actor:
    actor = request.auth
    assert isinstance(actor, Actor)
    return actor


@router.get(
    "/me",
    response={200: WhoAmI, **ERRORS},
    tags=["me"],
    summary="Who am I",
    description=(
        "The caller: their username, whether they are an operator, their role in each "
        "tenant the credential sees, and the credential itself (a personal API token, or an "
        "OAuth sign-in)."
    ),
)
def whoami(request: HttpRequest) -> WhoAmI:
    actor = actor_of(request)
    seen = dict(actor.tenants().values_list("pk", "slug"))
    roles = {
        seen[tenant_id]: role
        for tenant_id, role in roles_of(actor.user).items()
        if tenant_id in seen
    }
    return WhoAmI(
        username=actor.user.get_username(),
        operator=actor.operator,
        roles=roles,
        token=TokenOut.of(actor.token) if actor.token is not None else None,
        credential=actor.label,
    )


@router.get(
    "/tenants",
    response={200: Page[TenantOut], **ERRORS},
    summary="List tenants",
    description=(
        "The tenants the caller sees, by slug, a page at a time: every tenant for an "
        "operator, their own for a member, the one tenant a narrowed credential is limited "
        "to."
    ),
)
def list_tenants(request: HttpRequest, paging: Query[PageQuery]) -> Page[TenantOut]:
    return page(actor_of(request).tenants(), ("slug",), paging, TenantOut.of)


@router.post(
    "/tenants",
    response={201: TenantOut, **ERRORS, 409: ProblemOut},
    summary="Create a tenant",
    description="Operators only. 409 when a tenant of that slug exists.",
)
def create_tenant(request: HttpRequest, payload: TenantIn) -> Status[TenantOut]:
    actor = actor_of(request)
    actor.may_operate()
    if Tenant.objects.filter(slug=payload.slug).exists():
        raise Problem(409, f"A tenant '{payload.slug}' exists already.")
    tenant = Tenant(
        slug=payload.slug,
        name=payload.name,
        is_active=payload.active,
        max_connections=payload.max_connections,
    )
    tenant.full_clean()
    tenant.save()
    record(actor, tenant, ADDITION)
    return Status(201, TenantOut.of(tenant))


@router.get(
    "/tenants/{slug}",
    response={200: TenantOut, **ERRORS},
    summary="Get a tenant",
    description=("404 for a tenant the caller does not see, as for one that does not exist."),
)
def get_tenant(request: HttpRequest, slug: str) -> TenantOut:
    return TenantOut.of(actor_of(request).tenant(slug))


@router.patch(
    "/tenants/{slug}",
    response={200: TenantOut, **ERRORS},
    summary="Change a tenant",
    description=(
        "Operators only: its name, whether it is active (an inactive tenant's keys and "
        "sign-ins are refused at /mcp) and its connection limit. A field left out is kept."
    ),
)
def change_tenant(request: HttpRequest, slug: str, payload: TenantPatch) -> TenantOut:
    actor = actor_of(request)
    tenant = actor.tenant(slug)
    actor.may_operate()
    given = payload.model_dump(exclude_unset=True)
    fields = {"active": "is_active"}
    for name, value in given.items():
        setattr(tenant, fields.get(name, name), value)
    tenant.full_clean()
    tenant.save()
    record(actor, tenant, CHANGE, fields=[fields.get(name, name) for name in given])
    return TenantOut.of(tenant)
