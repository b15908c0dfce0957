"""A tenant's tools searched as a model would search them (`search_tools`), from each enabled
server's last listing (`mcp_gateway.find_tools`, the admin's search box's answer): so that a
script can see which description hides a tool."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from api.problems import invalid
from api.routes.tenants import ERRORS, actor_of
from api.routes.toolboxes import toolbox_of
from mcp_gateway import find_tools

router = Router(tags=["tools"])
BLANK = "The query (q) cannot be empty."
BLANK_FIELD = "Say what the tool should do, in a few words."


class SearchQuery(Schema):
    q: str = Field(description="What a model would ask for, in a few words.")
    toolbox: str | None = Field(
        None, min_length=1, description="Search this toolbox only (default: every toolbox)."
    )
    limit: int = Field(10, ge=1, le=50, description="How many tools, best first.")


class FoundToolOut(Schema):
    """A tool entry exactly as `open_toolbox` and `search_tools` list it."""

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = Field(alias="inputSchema")
    output_schema: dict[str, Any] | None = Field(None, alias="outputSchema")
    annotations: dict[str, Any] | None = None
    server: str
    toolbox: str


class NotSearchedOut(Schema):
    toolbox: str
    server: str
    reason: str = Field(description="`never listed` or `its last check failed`: check it.")


class ToolSearchOut(Schema):
    query: str
    tools: list[FoundToolOut]
    not_searched: list[NotSearchedOut] = Field(
        description="Enabled servers whose tools are not known, so not searched."
    )


@router.get(
    "/tenants/{slug}/tools/search",
    response={200: ToolSearchOut, **ERRORS},
    by_alias=True,
    exclude_none=True,
    summary="Search a tenant's tools",
    description=(
        "What `search_tools` would answer a model that may open every toolbox of the tenant "
        "(or `toolbox` only): the best `limit` tools for `q`, best first, each as "
        "`open_toolbox` lists it. From each enabled server's last listing (an admin's check "
        "or a client's open): tool filters apply, tools held for approval are left out, and "
        "servers never listed (or whose last check failed) are named in `not_searched`. "
        "Every member of the tenant may search."
    ),
)
def search_tools(request: HttpRequest, slug: str, params: Query[SearchQuery]) -> dict[str, Any]:
    tenant = actor_of(request).tenant(slug)
    if not params.q.strip():
        raise invalid([{"field": "q", "message": BLANK_FIELD}], BLANK)
    if params.toolbox is not None:
        toolbox_of(tenant, params.toolbox)  # 404 for a toolbox the tenant does not have
    found = find_tools(tenant.pk, params.q, params.toolbox, params.limit)
    assert found is not None  # the tenant and its toolbox were just read
    # As a dict: the response schema reads the entries' own keys (`inputSchema`).
    return {
        "query": params.q,
        "tools": [dict(tool.entry) for tool in found.tools],
        "not_searched": [
            {"toolbox": server.toolbox, "server": server.server, "reason": server.reason}
            for server in found.not_searched
        ],
    }
