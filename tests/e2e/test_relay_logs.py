"""A downstream server's log messages through use_tool (issue 34): to the calling client
when it asked for them (2026-07-28: the request's `io.modelcontextprotocol/logLevel`, that
level and above; 2025-11-25: the same key, or every level on a call that asked for
progress), always to the gateway's log with the tenant and server; a flood cut to the
connection's rate, counted, and the operator told."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from dataclasses import replace

import mcp_types as types
import pytest

from mcp_gateway.observe import metrics
from tests.harness.live import TenantSetup, add_relay_probe
from tests.harness.results import payload, text_of, use
from tests.harness.servers import server_process
from toolboxes.models import Server

pytestmark = [pytest.mark.anyio]

ALL = [
    ("debug", "debug message"),
    ("info", "info message"),
    ("warning", "warning message"),
    ("error", "error message"),
]
LEVEL = "io.modelcontextprotocol/logLevel"


@pytest.fixture
def probe(make_setup) -> TenantSetup:
    setup = make_setup()
    add_relay_probe(setup.toolbox("dev"))
    return setup


class Heard:
    def __init__(self) -> None:
        self.messages: list[tuple[str, object, str | None]] = []

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.messages.append((params.level, params.data, params.logger))

    def levels(self) -> list[tuple[str, object]]:
        assert all(logger == "probe" for *_, logger in self.messages)
        return [(level, data) for level, data, _ in self.messages]


async def _progress(progress: float, total: float | None, message: str | None) -> None:
    pass


async def test_a_2026_client_gets_the_levels_it_asked_for(live_gateway, probe):
    heard = Heard()
    async with live_gateway.client(probe.key, log_level="info", logging_callback=heard) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await client.call_tool("use_tool", use("dev", "probe", "log"))
    assert text_of(result) == "logged"
    assert heard.levels() == ALL[1:]


async def test_a_2026_client_that_asked_for_none_gets_none(live_gateway, probe, caplog):
    heard = Heard()
    caplog.set_level(logging.DEBUG, logger="workbench.downstream.log")
    async with live_gateway.client(probe.key, logging_callback=heard) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await client.call_tool("use_tool", use("dev", "probe", "log"))
    assert text_of(result) == "logged"
    assert heard.messages == []
    # The gateway's log has every one, with the tenant, the server and the level.
    lines = [
        (record.getMessage(), record.tenant, record.server, record.mcp_level)
        for record in caplog.records
        if record.name == "workbench.downstream.log"
    ]
    assert lines == [
        (f"[acme/dev/probe] probe {level}: {data}", "acme", "probe", level) for level, data in ALL
    ]


async def test_a_2025_client_that_asked_for_progress_gets_every_level(live_gateway, probe):
    heard = Heard()
    async with live_gateway.session(probe.key, logging_callback=heard) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool(
            "use_tool", use("dev", "probe", "log"), progress_callback=_progress
        )
    assert text_of(result) == "logged"
    assert heard.levels() == ALL


async def test_a_2025_client_may_name_a_level_in_the_request_meta(live_gateway, probe):
    heard = Heard()
    async with live_gateway.session(probe.key, logging_callback=heard) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool(
            "use_tool", use("dev", "probe", "log"), meta={LEVEL: "warning"}
        )
        plain = await session.call_tool("use_tool", use("dev", "probe", "log"))
    assert text_of(result) == text_of(plain) == "logged"
    assert heard.levels() == ALL[2:]  # and none of the plain call's: it asked for none


def dropped_now() -> float:
    """The dropped notifications of the probe, as a scrape of /metrics reads them."""
    text = metrics.exposition().decode()
    found = re.search(
        r'^workbench_downstream_notifications_dropped_total\{server="probe",'
        r'tenant="acme",toolbox="dev"\} (\S+)$',
        text,
        re.MULTILINE,
    )
    return float(found.group(1)) if found else 0.0


async def test_a_flood_is_cut_to_the_connections_rate(live_gateway, probe, caplog):
    """100,000 notifications in one call: the call answers, the gateway stays free for the
    next one, the excess is dropped and counted, and the operator told."""
    count = 100_000
    heard = Heard()
    caplog.set_level(logging.WARNING, logger="workbench.downstream")
    async with live_gateway.client(probe.key, log_level="info", logging_callback=heard) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        before = dropped_now()
        started = time.perf_counter()
        flooded = await client.call_tool("use_tool", use("dev", "probe", "flood", {"count": count}))
        elapsed = time.perf_counter() - started
        after = await client.call_tool("use_tool", use("dev", "probe", "decorated"))
    assert text_of(flooded) == f"flooded {count}"
    assert text_of(after) == "decorated"
    lost = dropped_now() - before
    assert 0 < lost < count
    # What the client heard is what was kept (the call's queue may drop more: a slow client).
    assert 0 < len(heard.messages) <= count - lost
    told = [r.getMessage() for r in caplog.records if "faster than" in r.getMessage()]
    assert told[0] == (
        "[acme/dev/probe] the server sends notifications faster than 100 a second: "
        "dropping them until it slows down"
    )
    print(f"flood of {count} through the gateway: {elapsed:.2f}s, {lost:.0f} dropped")


@pytest.fixture
def remote_probe(make_setup) -> Iterator[TenantSetup]:
    """The probe as a remote server (Streamable HTTP, stateful)."""
    with server_process("relay_probe.py") as port:
        setup = make_setup()
        Server.objects.create(
            toolbox=setup.toolbox("dev"),
            name="probe",
            transport="streamable-http",
            url=f"http://127.0.0.1:{port}/mcp",
        )
        yield setup


async def test_a_remote_servers_log_messages_reach_the_client(live_gateway, remote_probe):
    heard = Heard()
    async with live_gateway.client(
        remote_probe.key, log_level="warning", logging_callback=heard
    ) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await client.call_tool("use_tool", use("dev", "probe", "log"))
    assert text_of(result) == "logged"
    assert heard.levels() == ALL[2:]


async def test_the_toolbox_endpoint_relays_log_messages_and_the_request_meta(live_gateway, probe):
    """A call on `/mcp/t/<tenant>/toolboxes/<toolbox>` is a use_tool: the same relay."""
    heard = Heard()
    endpoint = replace(live_gateway, url=live_gateway.url.rstrip("/") + "/t/acme/toolboxes/dev")
    async with endpoint.client(probe.key, log_level="error", logging_callback=heard) as client:
        logged = await client.call_tool("probe__log", {})
        echoed = await client.call_tool("probe__echo_meta", {}, meta={"acme/request": 7})
    assert text_of(logged) == "logged"
    assert heard.levels() == ALL[3:]
    assert echoed.structured_content is not None
    assert echoed.structured_content["acme/request"] == 7
