"""Every list of the API a page at a time, by cursor (keyset pagination).

A list has one stable order, unique per row (e.g. `("name",)`, `("-at", "-pk")`); a page
answers `items` and `next_cursor`, the opaque (urlsafe base64 of JSON) ordering key of its
last row. The next page is the rows after that key, so rows added or removed between
pages neither repeat nor shift the others. A cursor is checked as the list's fields would
check its values: anything else is a 422 naming `cursor`.
"""

from __future__ import annotations

import base64
import binascii
import json
import operator
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import reduce
from typing import Any, Generic, TypeVar

from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db.models import Field as ModelField
from django.db.models import Model, Q, QuerySet
from django.utils import timezone
from ninja import Schema
from pydantic import Field

from api.problems import invalid

T = TypeVar("T")
MAX_PAGE = 200
DEFAULT_PAGE = 50
BAD_CURSOR = "is not a cursor this API gave"
NEXT_CURSOR = "Pass as ?cursor= for the next page; null: last."


class PageQuery(Schema):
    cursor: str | None = Field(default=None, description="The previous page's next_cursor.")
    limit: int = Field(default=DEFAULT_PAGE, ge=1, le=MAX_PAGE)


class Page(Schema, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(description=NEXT_CURSOR)


def _field(model: type[Model], path: str) -> ModelField:
    """The model field a lookup path (`server__toolbox__name`, `pk`) ends at."""
    *relations, last = path.split("__")
    for name in relations:
        model = model._meta.get_field(name).related_model
    if last == "pk":
        return model._meta.pk
    field = model._meta.get_field(last)
    assert isinstance(field, ModelField)
    return field


def _value(row: Model, path: str) -> Any:
    value: Any = row
    for name in path.split("__"):
        value = getattr(value, name)
    return value.isoformat() if isinstance(value, datetime) else value


def encode(row: Model, order: Sequence[str]) -> str:
    key = [_value(row, name.removeprefix("-")) for name in order]
    text = json.dumps(key, ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode(cursor: str, model: type[Model], order: Sequence[str]) -> list[Any]:
    """The ordering key a cursor holds, each value as its field reads it; else a 422."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        key = json.loads(text)
        if "\x00" in text or not isinstance(key, list) or len(key) != len(order):
            raise ValueError(cursor)
        values = []
        for name, raw in zip(order, key, strict=True):
            if not isinstance(raw, str | int) or isinstance(raw, bool):
                raise ValueError(cursor)
            field = _field(model, name.removeprefix("-"))
            value = field.to_python(raw)
            field.run_validators(value)
            if isinstance(value, datetime) and timezone.is_naive(value):
                raise ValueError(cursor)
            values.append(value)
        return values
    except (ValueError, ValidationError, binascii.Error, UnicodeDecodeError, FieldDoesNotExist):
        raise invalid([{"field": "cursor", "message": BAD_CURSOR}]) from None


def after(order: Sequence[str], key: Sequence[Any]) -> Q:
    """The rows that come after `key` in `order`: the first field past it, or equal and
    the next past it, and so on."""
    clauses = []
    for index, name in enumerate(order):
        equal = {
            field.removeprefix("-"): value
            for field, value in zip(order[:index], key[:index], strict=True)
        }
        past = "lt" if name.startswith("-") else "gt"
        clauses.append(Q(**equal, **{f"{name.removeprefix('-')}__{past}": key[index]}))
    return reduce(operator.or_, clauses)


def page(
    rows: QuerySet[Any], order: Sequence[str], query: PageQuery, item: Callable[[Any], T]
) -> Page[T]:
    """One page of `rows` in `order` (unique per row), after `query.cursor`."""
    if query.cursor:
        rows = rows.filter(after(order, decode(query.cursor, rows.model, order)))
    found = list(rows.order_by(*order)[: query.limit + 1])
    more = len(found) > query.limit
    found = found[: query.limit]
    return Page(
        items=[item(row) for row in found],
        next_cursor=encode(found[-1], order) if more else None,
    )
