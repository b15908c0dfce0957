"""calls.writer.save_batch: the gateway's door into the call log. Payloads are kept only
for tenants that opted in, capped, redacted by the serving connections' redactors."""

from __future__ import annotations

import time
from typing import Any

import mcp_types as types
import pytest

from calls.models import CallRecord, PayloadCapture
from calls.writer import save_batch
from kernel.redaction import Redactor
from mcp_gateway.observe.calllog import CallEntry
from toolboxes.models import ApiKey, Tenant, Toolbox

SECRET = "sk-live-0123456789abcdef"


def entry(
    tenant: Tenant, arguments: Any, text: str, redactors: tuple[Redactor, ...] = ()
) -> CallEntry:
    return CallEntry(
        at=time.time(),
        tenant_id=tenant.pk,
        key_id=0,
        key_prefix="abcdefgh",
        client_name="client",
        client_version="1.0",
        session_id="s",
        meta_tool="use_tool",
        duration_ms=12.5,
        outcome="ok",
        error_code="",
        incident="",
        arguments=arguments,
        result=types.CallToolResult(content=[types.TextContent(type="text", text=text)]),
        toolbox="dev",
        server="fs",
        tool="echo",
        redactors=redactors,
    )


@pytest.fixture
def tenant(db: None, settings: Any) -> Tenant:
    settings.WORKBENCH_CALL_LOG_PAYLOAD_BYTES = 200
    tenant = Tenant.objects.create(slug="acme")
    Toolbox.objects.create(tenant=tenant, name="dev", description="dev")
    return tenant


def test_payloads_are_not_kept_without_the_opt_in(tenant: Tenant) -> None:
    api_key, _ = ApiKey.issue(tenant)
    one = entry(tenant, {"text": "hello"}, "hello")
    one.key_id = api_key.pk
    save_batch([one])
    row = CallRecord.objects.get()
    assert row.key == api_key
    assert (row.arguments, row.result) == ("", "")
    assert row.bytes_in == len('{"text":"hello"}') and row.bytes_out > len("hello")
    assert (row.key_prefix, row.client_name, row.duration_ms) == ("abcdefgh", "client", 12.5)


def test_opted_in_payloads_are_capped_and_redacted(tenant: Tenant) -> None:
    PayloadCapture.objects.create(tenant=tenant)
    save_batch([entry(tenant, {"text": f"token {SECRET}"}, "y" * 500, (Redactor([SECRET]),))])
    row = CallRecord.objects.get()
    assert row.arguments == '{"text": "token [redacted]"}'
    assert row.result.endswith("more characters]") and len(row.result) < 260


def test_an_opens_payload_is_redacted_by_all_its_servers_redactors_at_once(
    tenant: Tenant,
) -> None:
    """An open's tool list holds every server's text: one server's secret containing
    another's is replaced whole, whichever server it came from."""
    PayloadCapture.objects.create(tenant=tenant)
    longer = f"{SECRET}-and-more"
    redactors = (Redactor([SECRET]), Redactor([longer]), Redactor(['say "hi"\\now']))
    save_batch([entry(tenant, {}, f'{longer} {SECRET} say "hi"\\now', redactors)])
    row = CallRecord.objects.get()
    assert '"text":"[redacted] [redacted] [redacted]"' in row.result


def test_a_deleted_key_or_tenant_fails_no_batch(tenant: Tenant) -> None:
    gone = Tenant.objects.create(slug="gone")
    gone_id = gone.pk
    gone.delete()
    orphan = entry(tenant, {}, "x")
    orphan.key_id = 999_999  # deleted since the call
    lost = entry(tenant, {}, "x")
    lost.tenant_id = gone_id
    save_batch([orphan, lost])
    row = CallRecord.objects.get()
    assert (row.tenant, row.key, row.key_prefix) == (tenant, None, "abcdefgh")


def test_a_batch_is_stored_as_the_model_reads_it(tenant: Tenant) -> None:
    """Rows go in by one executemany of plain values: every column reads back as the
    model's own (the time in UTC to the microsecond, defaults for what a call leaves out)."""
    first, second = entry(tenant, {"n": 1}, "one"), entry(tenant, {"n": 2}, "two")
    first.at, second.at = 1_700_000_000.123456, 1_700_000_001.5
    second.outcome, second.error_code, second.incident = "TIMEOUT", "TIMEOUT", "inc-1"
    save_batch([first, second])
    rows = list(CallRecord.objects.order_by("at"))
    assert [row.at.timestamp() for row in rows] == [1_700_000_000.123456, 1_700_000_001.5]
    assert rows[0].at.utcoffset() is not None
    assert [(row.outcome, row.error_code, row.incident) for row in rows] == [
        ("ok", "", ""),
        ("TIMEOUT", "TIMEOUT", "inc-1"),
    ]
    assert [(row.toolbox, row.server, row.tool, row.member) for row in rows] == [
        ("dev", "fs", "echo", ""),
    ] * 2
    assert (rows[0].bytes_in, rows[0].meta_tool, rows[0].session_id) == (
        len('{"n":1}'),
        "use_tool",
        "s",
    )


def test_an_empty_batch_writes_nothing(tenant: Tenant) -> None:
    save_batch([])
    assert not CallRecord.objects.exists()


def test_the_writers_thread_keeps_its_connection_and_replaces_a_dropped_one(
    transactional_db: None,
) -> None:
    """The call log's writer runs in a worker thread: it keeps the thread's connection from
    batch to batch (closing it each time cost a reconnect and, on SQLite, a checkpoint),
    and one the database server dropped is replaced before the next batch."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    tenant = Tenant.objects.create(slug="acme")

    def batch() -> tuple[object, int | None]:
        save_batch([entry(tenant, {}, "x")])
        backend_pid = None
        if connection.vendor == "postgresql":
            backend_pid = connection.connection.info.backend_pid
        return connection.connection, backend_pid

    with ThreadPoolExecutor(1) as writer:
        first, backend_pid = writer.submit(batch).result()
        second, _ = writer.submit(batch).result()
        assert second is first
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # the server ends the writer's session
                cursor.execute("SELECT pg_terminate_backend(%s)", [backend_pid])
            third, _ = writer.submit(batch).result()
            assert third is not first
        writer.submit(lambda: connection.close()).result()
    expected = 3 if connection.vendor == "postgresql" else 2
    assert CallRecord.objects.filter(tenant=tenant).count() == expected
