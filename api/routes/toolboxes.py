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


@router.get(BASE, response={200: Page[ToolboxOut], **ERRORS})
def list_toolboxes(request: HttpRequest, slug: str, paging: Query[PageQuery]) -> Page[ToolboxOut]:
    tenant = actor_of(request).tenant(slug)
    return page(tenant.toolboxes.all(), ("name",), paging, ToolboxOut.of)


@router.post(BASE, response={201: ToolboxOut, **ERRORS})
def create_toolbox(request: HttpRequest, slug: str, payload: ToolboxIn) -> Status[ToolboxOut]:
    actor = actor_of(request)
    tenant = actor.tenant(slug, change=True)
    toolbox = Toolbox(tenant=tenant, name=payload.name, description=payload.description)
    toolbox.full_clean()
    toolbox.save()
    record(actor, toolbox, ADDITION)
    return Status(201, ToolboxOut.of(toolbox))


@router.get(BASE + "/{name}", response={200: ToolboxOut, **ERRORS})
def get_toolbox(request: HttpRequest, slug: str, name: str) -> ToolboxOut:
    return ToolboxOut.of(toolbox_of(actor_of(request).tenant(slug), name))


@router.patch(BASE + "/{name}", response={200: ToolboxOut, **ERRORS})
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


@router.delete(BASE + "/{name}", response={204: None, **ERRORS})
def delete_toolbox(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    actor = actor_of(request)
    toolbox = toolbox_of(actor.tenant(slug, change=True), name)
    record(actor, toolbox, DELETION)
    toolbox.delete()
    return HttpResponse(status=204)
