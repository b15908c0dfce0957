"""A tenant's call log (newest first, filtered, a page at a time by cursor) and its usage
(`calls.usage`: a day or a week of use_tool calls, per tool and per server)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from api.pages import Page, PageQuery, page
from api.routes.tenants import ERRORS, actor_of
from api.schemas import CallOut
from calls.models import CallRecord
from calls.usage import summary

router = Router(tags=["call log"])
NEWEST_FIRST = ("-at", "-pk")


class CallFilters(PageQuery):
    toolbox: str | None = None
    server: str | None = None
    tool: str | None = None
    meta_tool: str | None = None
    outcome: str | None = None
    key_prefix: str | None = None
    since: datetime | None = None
    until: datetime | None = None


@router.get(
    "/tenants/{slug}/calls",
    response={200: Page[CallOut], **ERRORS},
    summary="List calls",
    description=(
        "The tenant's call log, newest first: one row per `open_toolbox` and `use_tool`, "
        "filtered by the query's fields (`since` inclusive, `until` exclusive), a page at a "
        "time."
    ),
)
def list_calls(request: HttpRequest, slug: str, filters: Query[CallFilters]) -> Page[CallOut]:
    tenant = actor_of(request).tenant(slug)
    rows = CallRecord.objects.filter(tenant=tenant)
    for field in ("toolbox", "server", "tool", "meta_tool", "outcome", "key_prefix"):
        value = getattr(filters, field)
        if value is not None:
            rows = rows.filter(**{field: value})
    if filters.since is not None:
        rows = rows.filter(at__gte=filters.since)
    if filters.until is not None:
        rows = rows.filter(at__lt=filters.until)
    return page(
        rows, NEWEST_FIRST, filters, lambda row: CallOut.model_validate(row, from_attributes=True)
    )


class UsageLine(Schema):
    name: str
    calls: int
    errors: int
    p50_ms: float
    p95_ms: float


class UsageOut(Schema):
    window: Literal["day", "week"]
    calls: int
    errors: int
    error_rate: float
    tools: list[UsageLine]
    servers: list[UsageLine]
    truncated: bool = Field(description="true: the window held more calls than were read.")


class UsageQuery(Schema):
    window: Literal["day", "week"] = "day"


def _lines(lines: list[Any]) -> list[UsageLine]:
    return [
        UsageLine(
            name=line.name, calls=line.calls, errors=line.errors, p50_ms=line.p50, p95_ms=line.p95
        )
        for line in lines
    ]


@router.get("/tenants/{slug}/usage", response={200: UsageOut, **ERRORS}, summary="Get usage")
def usage(request: HttpRequest, slug: str, query: Query[UsageQuery]) -> UsageOut:
    """use_tool calls of the last day or week: error rate, p50/p95 per tool and server."""
    tenant = actor_of(request).tenant(slug)
    found = summary(CallRecord.objects.filter(tenant=tenant), query.window)
    return UsageOut(
        window=query.window,
        calls=found["calls"],
        errors=found["errors"],
        error_rate=found["error_rate"],
        tools=_lines(found["tools"]),
        servers=_lines(found["servers"]),
        truncated=found["truncated"],
    )
