"""A tenant's call log (newest first, filtered, a page at a time by cursor) and its usage
(`calls.usage`: a day or a week of use_tool calls, per tool and per server)."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any, Literal

from django.db.models import Q
from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from api.problems import invalid
from api.routes.tenants import ERRORS, actor_of
from api.schemas import CallOut, CallPage
from calls.models import CallRecord
from calls.usage import summary

router = Router(tags=["call log"])
MAX_PAGE = 200
BAD_CURSOR = "is not a cursor this API gave"


class CallFilters(Schema):
    cursor: str | None = None
    limit: int = Field(default=50, ge=1, le=MAX_PAGE)
    toolbox: str | None = None
    server: str | None = None
    tool: str | None = None
    meta_tool: str | None = None
    outcome: str | None = None
    key_prefix: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def encode(record: CallRecord) -> str:
    return base64.urlsafe_b64encode(f"{record.at.isoformat()}|{record.pk}".encode()).decode()


def decode(cursor: str) -> tuple[datetime, int]:
    try:
        at, _, pk = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        return datetime.fromisoformat(at), int(pk)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise invalid([{"field": "cursor", "message": BAD_CURSOR}]) from None


@router.get("/tenants/{slug}/calls", response={200: CallPage, **ERRORS})
def list_calls(request: HttpRequest, slug: str, filters: Query[CallFilters]) -> CallPage:
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
    if filters.cursor:
        at, pk = decode(filters.cursor)
        rows = rows.filter(Q(at__lt=at) | Q(at=at, pk__lt=pk))
    page = list(rows.order_by("-at", "-pk")[: filters.limit + 1])
    more = len(page) > filters.limit
    page = page[: filters.limit]
    return CallPage(
        items=[CallOut.model_validate(row, from_attributes=True) for row in page],
        next_cursor=encode(page[-1]) if more else None,
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


@router.get("/tenants/{slug}/usage", response={200: UsageOut, **ERRORS})
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
