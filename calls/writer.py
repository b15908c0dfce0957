"""The gateway's one door into the call log: `save_batch`, run in a worker thread by
the gateway's call log (never on the event loop). Sizes are measured and opted-in payloads
serialised here, off the request path, and redacted by the redactors of the connections
that served them (what the gateway redacts from its log about those servers: a catalog
entry's secrets included, which no row of the server holds).

Rows go in by one `executemany` of plain values rather than `bulk_create`, whose per-field
preparation of model instances cost 0.28 ms of CPU a row against 0.03 (SQLite, rows of 20
columns): the writer shares its process's interpreter with the event loop, so what it
spends every call waits for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from calls.models import CallRecord, PayloadCapture
from kernel.redaction import Redactor
from toolboxes.models import ApiKey, Tenant


def _keep_usable_connection() -> None:
    """The writer's thread keeps its database connection from batch to batch (nothing
    closes it: no request ends in this thread): closing it each time, as
    `close_old_connections` does with CONN_MAX_AGE 0, cost 2.5 ms a batch on SQLite (a WAL
    checkpoint at each close, then a new connection). One the server dropped (or that an
    error left broken) is replaced."""
    if connection.connection is not None and not connection.is_usable():
        connection.close()


def _size(value: Any) -> int:
    if value is None:
        return 0
    if hasattr(value, "model_dump_json"):
        return len(value.model_dump_json(by_alias=True, exclude_none=True))
    return len(json.dumps(value, separators=(",", ":"), default=str))


def _text(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "model_dump_json"):
        return value.model_dump_json(by_alias=True, exclude_none=True)
    return json.dumps(value, ensure_ascii=False, default=str)


def _capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def _redactor(redactors: tuple[Redactor, ...]) -> Redactor:
    """One connection's redactor as it is; an open's several, joined (its tool list holds
    each server's text)."""
    return redactors[0] if len(redactors) == 1 else Redactor.joined(redactors)


def save_batch(entries: Sequence[Any]) -> None:
    """Write call log entries (the gateway's `CallEntry`) in one statement."""
    if not connection.in_atomic_block:  # the writer's thread; never a caller's transaction
        _keep_usable_connection()
    # A tenant or key deleted since the call: its rows go (tenant) or lose the link (key),
    # rather than failing the whole batch on a foreign key.
    tenant_ids = set(
        Tenant.objects.filter(pk__in={e.tenant_id for e in entries}).values_list("pk", flat=True)
    )
    key_ids = set(
        ApiKey.objects.filter(pk__in={e.key_id for e in entries}).values_list("pk", flat=True)
    )
    entries = [entry for entry in entries if entry.tenant_id in tenant_ids]
    capture = set(
        PayloadCapture.objects.filter(tenant_id__in=tenant_ids, enabled=True).values_list(
            "tenant_id", flat=True
        )
    )
    limit = settings.WORKBENCH_CALL_LOG_PAYLOAD_BYTES
    redactors: dict[tuple[Redactor, ...], Redactor] = {}
    rows = []
    for entry in entries:
        arguments = result = ""
        if entry.tenant_id in capture:
            if entry.redactors not in redactors:
                redactors[entry.redactors] = _redactor(entry.redactors)
            redact = redactors[entry.redactors]
            arguments = _capped(redact(_text(entry.arguments)), limit)
            result = _capped(redact(_text(entry.result)), limit)
        rows.append(
            dict(
                at=datetime.fromtimestamp(entry.at, tz=UTC),
                tenant_id=entry.tenant_id,
                key_id=entry.key_id if entry.key_id in key_ids else None,
                key_prefix=entry.key_prefix[:64],
                client_name=entry.client_name,
                client_version=entry.client_version,
                session_id=entry.session_id[:100],
                meta_tool=entry.meta_tool,
                toolbox=entry.toolbox[:200],
                server=entry.server[:200],
                tool=entry.tool[:200],
                signed_in_as=entry.signed_in_as[:40],
                decision=entry.decision[:200],
                duration_ms=round(entry.duration_ms, 3),
                outcome=entry.outcome,
                error_code=entry.error_code,
                incident=entry.incident[:40],
                bytes_in=_size(entry.arguments),
                bytes_out=_size(entry.result),
                arguments=arguments,
                result=result,
            )
        )
    _insert(rows)


def _insert(rows: list[dict[str, Any]]) -> None:
    """INSERT rows of CallRecord's attributes (others take their field's default)."""
    if not rows:
        return
    ops = connection.ops
    fields = [field for field in CallRecord._meta.concrete_fields if not field.primary_key]
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        ops.quote_name(CallRecord._meta.db_table),
        ", ".join(ops.quote_name(field.column) for field in fields),
        ", ".join(["%s"] * len(fields)),
    )
    defaults = {field.attname: field.get_default() for field in fields}
    values = []
    for row in rows:
        row = defaults | row
        row["at"] = ops.adapt_datetimefield_value(row["at"])
        values.append([row[field.attname] for field in fields])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(sql, values)
