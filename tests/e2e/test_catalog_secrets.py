"""A server made from a catalog entry has secrets nobody typed into the server itself: the
tenant's secret parameters (filled into the entry's args or URL) and the operator's fixed
env. Its connection redacts them everywhere it is logged or recorded: the call log's
captured payloads, its stderr, incident lines, the HTTP client's request lines (issue 20)."""

from __future__ import annotations

import logging
import sys

import pytest
from asgiref.sync import sync_to_async

from calls.models import CallRecord, PayloadCapture
from tests.harness.live import TenantSetup
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.servers import http_fixture_process
from tests.harness.waits import eventually
from toolboxes.models import CatalogEntry, CatalogParameter, Server, Toolbox, Transport

pytestmark = pytest.mark.anyio

TENANT_SECRET = "tenant-secret-7f3a9c1d"  # a secret parameter, filled into an argument
OPERATOR_SECRET = "operator-secret-b81e4d02"  # the entry's own env, set by the operator
URL_SECRET = "url-secret-5c2e90aa"  # a secret parameter in a remote entry's URL


def catalog_server(
    toolbox: Toolbox, name: str, entry_name: str, *args: str, url: str = ""
) -> Server:
    """A server made from an entry whose parameter `token` is secret; a stdio entry runs
    the fixture server with `--prefix={{token}}` and the operator's OPERATOR_KEY."""
    if url:
        entry = CatalogEntry.objects.create(
            name=entry_name, transport=Transport.STREAMABLE_HTTP, url=url
        )
    else:
        entry = CatalogEntry.objects.create(
            name=entry_name,
            command=sys.executable,
            args=[FIXTURE_SERVER, "--prefix={{token}}", *args],
            env={"OPERATOR_KEY": OPERATOR_SECRET},
        )
    CatalogParameter.objects.create(entry=entry, name="token", required=True, secret=True)
    server = Server(
        toolbox=toolbox,
        name=name,
        catalog_entry=entry,
        secret_parameters={"token": URL_SECRET if url else TENANT_SECRET},
    )
    server.full_clean()
    server.save()
    return server


@pytest.fixture
def vault(make_setup) -> TenantSetup:
    """A tenant that opted in to payload capture, with one catalog-made server."""
    setup = make_setup()
    PayloadCapture.objects.create(tenant=setup.tenant)
    catalog_server(setup.toolbox("dev"), "vault", "io.example/vault", "--print-args")
    return setup


def call_log(setup: TenantSetup) -> list[CallRecord]:
    return list(CallRecord.objects.filter(tenant=setup.tenant).order_by("at"))


async def test_captured_payloads_are_redacted_with_the_connections_secrets(live_gateway, vault):
    async with live_gateway.session(vault.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        echoed = await session.call_tool(
            "use_tool", use("dev", "vault", "echo", {"text": f" {TENANT_SECRET}"})
        )
        env = await session.call_tool("use_tool", use("dev", "vault", "env"))
    # The tool's answer passes unchanged: redaction is for what is kept, not for the client.
    assert text_of(echoed) == f"{TENANT_SECRET} {TENANT_SECRET}"
    assert OPERATOR_SECRET in text_of(env)

    await eventually(
        lambda: sync_to_async(lambda: len(call_log(vault)) == 3)(), 15, "3 call log rows"
    )
    opened, echo, environment = await sync_to_async(call_log)(vault)
    assert (echo.tool, environment.tool) == ("echo", "env")
    assert echo.arguments == (
        '{"tool": {"toolbox": "dev", "server": "vault", "name": "echo"}, '
        '"arguments": {"text": " [redacted]"}}'
    )
    assert '"text":"[redacted] [redacted]"' in echo.result
    assert '"description":"[redacted]Echo the text back"' in opened.result  # its --prefix
    assert '\\"OPERATOR_KEY\\": \\"[redacted]\\"' in environment.result
    for row in (opened, echo, environment):
        assert TENANT_SECRET not in row.arguments + row.result
        assert OPERATOR_SECRET not in row.arguments + row.result


async def test_stderr_and_incident_lines_are_redacted_with_the_connections_secrets(
    live_gateway, vault, caplog
):
    caplog.set_level(logging.INFO)
    await sync_to_async(catalog_server)(
        await sync_to_async(vault.toolbox)("failing"),
        "dies",
        "io.example/dies",
        "--print-args",
        "--exit-at-start",
    )
    async with live_gateway.session(vault.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        leaked = await session.call_tool(
            "use_tool", use("dev", "vault", "leak", {"names": ["OPERATOR_KEY"]})
        )
        failed = await session.call_tool("open_toolbox", {"toolbox": "failing"})
    assert text_of(leaked) == "leaked"
    assert error_of(failed) == (
        "CONNECTION_FAILED",
        "Error opening toolbox 'failing': Failed to connect to server 'dies' in toolbox "
        "'failing': the server exited during start-up (exit code 2)",
    )
    stderr = [r.getMessage() for r in caplog.records if r.name == "workbench.downstream.stderr"]
    assert "[acme/dev/vault] fixture server started with --prefix=[redacted] --print-args" in (
        stderr
    )
    assert "[acme/dev/vault] OPERATOR_KEY=[redacted]" in stderr
    [incident] = [r.getMessage() for r in caplog.records if r.name == "workbench.incident"]
    assert incident.endswith(
        "(stderr tail: fixture server started with --prefix=[redacted] --print-args "
        "--exit-at-start | fixture server: exiting at start as asked)"
    )
    assert TENANT_SECRET not in caplog.text and OPERATOR_SECRET not in caplog.text


async def test_a_secret_in_a_remote_entrys_url_is_redacted_from_the_http_clients_log(
    live_gateway, make_setup, caplog
):
    caplog.set_level(logging.INFO)
    setup = await sync_to_async(make_setup)()
    with http_fixture_process() as port:
        await sync_to_async(catalog_server)(
            await sync_to_async(setup.toolbox)("dev"),
            "remote",
            "io.example/remote",
            url=f"http://127.0.0.1:{port}/mcp?key={{{{token}}}}",
        )
        async with live_gateway.session(setup.key) as session:
            payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            echoed = await session.call_tool(
                "use_tool", use("dev", "remote", "echo", {"text": "x"})
            )
    assert text_of(echoed) == "x"
    requests = [
        r.getMessage()
        for r in caplog.records
        if r.name == "httpx2" and f"127.0.0.1:{port}/" in r.getMessage()
    ]
    assert requests and all(f":{port}/mcp?key=[redacted] " in line for line in requests)
    assert URL_SECRET not in caplog.text
