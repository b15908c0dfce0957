"""The gateway's one door into the call log: `save_batch`, run in a worker thread by
`mcp_gateway.calllog` (never on the event loop). Sizes are measured and opted-in payloads
serialised here, off the request path."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from calls.models import CallRecord, PayloadCapture
from mcp_gateway.failures import Redactor, secret_values
from toolboxes.models import ApiKey, Server, Tenant


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


def _redactor(tenant_id: int, toolbox: str, server: str) -> Redactor:
    """The server's secret values, as the gateway redacts them from its log."""
    found = Server.objects.filter(
        toolbox__tenant_id=tenant_id, toolbox__name=toolbox, name=server
    ).first()
    if found is None:
        return Redactor()
    env = list((found.env or {}).values())
    headers = list((found.headers or {}).values())
    return Redactor(secret_values(env, headers))


def save_batch(entries: Sequence[Any]) -> None:
    """Write call log entries (`mcp_gateway.calllog.CallEntry`) in one statement."""
    if not connection.in_atomic_block:  # the writer's thread; never a caller's transaction
        close_old_connections()  # a long-lived thread: drop a connection the server closed
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
    redactors: dict[tuple[int, str, str], Redactor] = {}
    records = []
    for entry in entries:
        arguments = result = ""
        if entry.tenant_id in capture:
            where = (entry.tenant_id, entry.toolbox, entry.server)
            if where not in redactors:
                redactors[where] = _redactor(*where)
            redact = redactors[where]
            arguments = _capped(redact(_text(entry.arguments)), limit)
            result = _capped(redact(_text(entry.result)), limit)
        records.append(
            CallRecord(
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
    CallRecord.objects.bulk_create(records)
