"""calls.writer.save_batch: the gateway's door into the call log. Payloads are kept only
for tenants that opted in, capped, with the server's secret values redacted."""

from __future__ import annotations

import sys
import time
from typing import Any

import mcp_types as types
import pytest

from calls.models import CallRecord, PayloadCapture
from calls.writer import save_batch
from mcp_gateway.calllog import CallEntry
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

SECRET = "sk-live-0123456789abcdef"


def entry(tenant: Tenant, arguments: Any, text: str) -> CallEntry:
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
    )


@pytest.fixture
def tenant(db: None, settings: Any) -> Tenant:
    settings.WORKBENCH_CALL_LOG_PAYLOAD_BYTES = 200
    tenant = Tenant.objects.create(slug="acme")
    toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev")
    Server.objects.create(
        toolbox=toolbox, name="fs", command=sys.executable, env={"API_TOKEN": SECRET}
    )
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
    save_batch([entry(tenant, {"text": f"token {SECRET}"}, "y" * 500)])
    row = CallRecord.objects.get()
    assert SECRET not in row.arguments and "[redacted]" in row.arguments
    assert row.result.endswith("more characters]") and len(row.result) < 260


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
