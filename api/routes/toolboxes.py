"""A tenant's toolboxes."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Status

from api.actor import one
from api.history import ADDITION, CHANGE, DELETION, record
from api.pages import Page, PageQuery, page
from api.routes.tenants import ERRORS, actor_of
from api.schemas import ToolboxIn, ToolboxOut, ToolboxPatch
from toolboxes.models import Tenant, Toolbox

router = Router(tags=["toolboxes"])
BASE = "/tenants/{slug}/toolboxes"


def toolbox_of(tenant: Tenant, name: str) -> Toolbox:
    return one(tenant.toolboxes.filter(name=name), "toolbox", name)


@router.get(
    BASE,
    response={200: Page[ToolboxOut], **ERRORS},
    summary="List a tenant's toolboxes",
    description="By name, a page at a time. Every member of the tenant reads them.",
)
def list_toolboxes(request: HttpRequest, slug: str, paging: Query[PageQuery]) -> Page[ToolboxOut]:
    tenant = actor_of(request).tenant(slug)
    return page(tenant.toolboxes.all(), ("name",), paging, ToolboxOut.of)


@router.post(
    BASE,
    response={201: ToolboxOut, **ERRORS},
    summary="Create a toolbox",
    description=(
        "The tenant's admins (and operators). Its name is what clients open "
        "(`open_toolbox`), and its description what the instructions list for them."
    ),
)
def create_toolbox(request: HttpRequest, slug: str, payload: ToolboxIn) -> Status[ToolboxOut]:
    actor = actor_of(request)
    tenant = actor.tenant(slug, change=True)
    toolbox = Toolbox(
        tenant=tenant,
        name=payload.name,
        description=payload.description,
        offered_alone=payload.offered_alone,
    )
    toolbox.full_clean()
    toolbox.save()
    record(actor, toolbox, ADDITION)
    return Status(201, ToolboxOut.of(toolbox))


@router.get(
    BASE + "/{name}",
    response={200: ToolboxOut, **ERRORS},
    summary="Get a toolbox",
    description="404 for a toolbox the tenant does not have.",
)
def get_toolbox(request: HttpRequest, slug: str, name: str) -> ToolboxOut:
    return ToolboxOut.of(toolbox_of(actor_of(request).tenant(slug), name))


@router.patch(
    BASE + "/{name}",
    response={200: ToolboxOut, **ERRORS},
    summary="Change a toolbox",
    description=(
        "Its name, description or `offered_alone`; a field left out (or null) is kept. API "
        "keys limited to it stay limited to it under its new name."
    ),
)
def change_toolbox(request: HttpRequest, slug: str, name: str, payload: ToolboxPatch) -> ToolboxOut:
    actor = actor_of(request)
    toolbox = toolbox_of(actor.tenant(slug, change=True), name)
    given = payload.model_dump(exclude_unset=True, exclude_none=True)
    for field, value in given.items():
        setattr(toolbox, field, value)
    toolbox.full_clean()
    toolbox.save()
    record(actor, toolbox, CHANGE, fields=given)
    return ToolboxOut.of(toolbox)


@router.delete(
    BASE + "/{name}",
    response={204: None, **ERRORS},
    summary="Delete a toolbox",
    description=(
        "With its servers. A key limited to it keeps its other toolboxes; one limited to it "
        "alone sees none (it does not become a key for every toolbox)."
    ),
)
def delete_toolbox(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    actor = actor_of(request)
    toolbox = toolbox_of(actor.tenant(slug, change=True), name)
    record(actor, toolbox, DELETION)
    toolbox.delete()
    return HttpResponse(status=204)
