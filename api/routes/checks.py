"""A server check: connect it as the gateway would and list its tools
(`mcp_gateway.check_servers`, which records the status and the offer for pinning). The last
status is a server's `last_check_*` fields, a failure's incident and, for operators, its
cause (what happened and what to change) among them."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Field, Router, Schema

from api.history import CHANGE, record
from api.routes.servers import BASE as SERVERS
from api.routes.servers import server_of
from api.routes.tenants import ERRORS, actor_of
from api.routes.toolboxes import toolbox_of
from mcp_gateway import check_servers

router = Router(tags=["servers"])


class CheckOut(Schema):
    ok: bool
    milliseconds: int
    reason: str
    incident: str | None
    cause: str | None = Field(
        description="What happened and what to change, the server's secrets redacted: for "
        "operators (null for others); `reason` is the phrase a client reads."
    )
    tools: list[str]


@router.post(
    SERVERS + "/{server}/check",
    response={200: CheckOut, **ERRORS},
    summary="Check a server",
    description=(
        "Connect to it as the gateway would and list its tools: whether it worked, how long "
        "it took, and for a failure its reason and incident id. Saved as the server's last "
        "check; the tool definitions it offers wait for approval where pinning holds them."
    ),
)
def check(request: HttpRequest, slug: str, name: str, server: str) -> CheckOut:
    actor = actor_of(request)
    found = server_of(toolbox_of(actor.tenant(slug, change=True), name), server)
    found = type(found).objects.select_related("toolbox__tenant").get(pk=found.pk)
    [result] = check_servers([found])
    record(actor, found, CHANGE, "Checked")
    return CheckOut(
        ok=result.ok,
        milliseconds=result.milliseconds,
        reason=result.reason,
        incident=result.incident,
        cause=result.cause if actor.operator else None,
        tools=[tool["name"] for tool in result.tools],
    )
