"""A tenant's call log: newest first, filtered, a page at a time by cursor."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime

from django.db.models import Q
from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from api.problems import invalid
from api.routes.tenants import ERRORS, actor_of
from api.schemas import CallOut, CallPage
from calls.models import CallRecord

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
