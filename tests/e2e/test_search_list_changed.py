"""A tool a server starts offering at run time (`notifications/tools/list_changed`, which
the gateway follows by listing the server again) is found by the next `search_tools`
(issue 33's freshness, on issue 34's relay): no open, no admin, no restart."""

from __future__ import annotations

import pytest

from tests.harness.live import TenantSetup, add_relay_probe
from tests.harness.results import payload, text_of, use

pytestmark = [pytest.mark.anyio]

QUERY = {"query": "a tool added at run time"}


def found(result: object) -> list[str]:
    return [f"{tool['server']}/{tool['name']}" for tool in payload(result)["tools"]]


@pytest.fixture
def probe(make_setup) -> TenantSetup:
    setup = make_setup()
    add_relay_probe(setup.toolbox("dev"), pinning="off")
    return setup


async def test_a_tool_announced_at_run_time_is_found_by_the_next_search(live_gateway, probe):
    async with live_gateway.session(probe.key) as session:
        before = found(await session.call_tool("search_tools", QUERY))
        added = await session.call_tool("use_tool", use("dev", "probe", "add_tool"))
        after = found(await session.call_tool("search_tools", QUERY))
        called = await session.call_tool("use_tool", use("dev", "probe", "added"))
    assert "probe/added" not in before
    assert text_of(added) == "added"
    assert after[0] == "probe/added"
    assert text_of(called) == "added here"


async def test_a_2026_client_finds_it_too(live_gateway, probe):
    async with live_gateway.client(probe.key) as client:
        before = found(await client.call_tool("search_tools", QUERY))
        await client.call_tool("use_tool", use("dev", "probe", "add_tool"))
        after = found(await client.call_tool("search_tools", QUERY))
    assert "probe/added" not in before and after[0] == "probe/added"
