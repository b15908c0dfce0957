"""Tool definitions a tenant's servers offer, held for approval (pinning): listed with the
diff against what was approved, approved or rejected by the tenant's admins
(`toolboxes.pins`)."""

from __future__ import annotations

from typing import Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from api.actor import one
from api.history import CHANGE, record
from api.pages import Page, PageQuery, page
from api.routes.servers import BASE as SERVERS
from api.routes.servers import server_of
from api.routes.tenants import ERRORS, actor_of
from api.routes.toolboxes import toolbox_of
from toolboxes import pins
from toolboxes.models import Server, ToolPin

router = Router(tags=["tool definitions"])
BY_SERVER = ("server__toolbox__name", "server__name", "name")  # unique in a tenant


class PinOut(Schema):
    toolbox: str
    server: str
    tool: str
    status: str = Field(description="approved, rejected, held: new, held: changed")
    diff: str = Field(description="Unified diff, approved to offered (empty when approved).")
    offered_at: str

    @staticmethod
    def of(pin: ToolPin) -> PinOut:
        return PinOut(
            toolbox=pin.server.toolbox.name,
            server=pin.server.name,
            tool=pin.name,
            status=pin.status,
            diff="" if not pin.is_held else pin.diff(),
            offered_at=pin.offered_at.isoformat(),
        )


class PinFilters(PageQuery):
    status: Literal["held", "all"] = "held"


@router.get(
    "/tenants/{slug}/tool-definitions",
    response={200: Page[PinOut], **ERRORS},
    summary="List tool definitions",
    description=(
        "The definitions the tenant's servers offer: those held for an admin's approval "
        "(`status=held`, the default) or all of them, each held one with the diff from what "
        "was approved."
    ),
)
def list_pins(request: HttpRequest, slug: str, filters: Query[PinFilters]) -> Page[PinOut]:
    tenant = actor_of(request).tenant(slug)
    rows = ToolPin.objects.filter(server__toolbox__tenant=tenant).select_related("server__toolbox")
    if filters.status == "held":
        rows = pins.held(rows)
    return page(rows, BY_SERVER, filters, PinOut.of)


def pin_of(server: Server, tool: str) -> ToolPin:
    rows = server.tool_pins.select_related("server__toolbox").filter(name=tool)
    return one(rows, "tool definition", tool)


def _decide(request: HttpRequest, slug: str, name: str, server: str, tool: str, *, approve: bool):
    actor = actor_of(request)
    found = server_of(toolbox_of(actor.tenant(slug, change=True), name), server)
    pin = pin_of(found, tool)
    (pins.approve if approve else pins.reject)([pin])
    record(actor, pin, CHANGE, "Approved" if approve else "Rejected")
    return PinOut.of(pin)


@router.post(
    SERVERS + "/{server}/tools/{tool}/approve",
    response={200: PinOut, **ERRORS},
    summary="Approve a tool definition",
    description=(
        "Clients see the definition the server offers now; running gateways follow within a second."
    ),
)
def approve(request: HttpRequest, slug: str, name: str, server: str, tool: str) -> PinOut:
    return _decide(request, slug, name, server, tool, approve=True)


@router.post(
    SERVERS + "/{server}/tools/{tool}/reject",
    response={200: PinOut, **ERRORS},
    summary="Reject a tool definition",
    description=(
        "Keep the offered definition from clients for good: the tool stays unlisted "
        "(`use_tool`: TOOL_NOT_APPROVED) until its server offers another definition and an "
        "admin approves it."
    ),
)
def reject(request: HttpRequest, slug: str, name: str, server: str, tool: str) -> PinOut:
    return _decide(request, slug, name, server, tool, approve=False)
