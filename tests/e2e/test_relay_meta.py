"""`_meta` both ways through use_tool (issue 34): a tool definition's `icons`, `_meta` and
`execution` reach open_toolbox's entries unchanged. Both protocol generations."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.live import TenantSetup, add_relay_probe
from tests.harness.results import payload

pytestmark = [pytest.mark.anyio]

DECORATED = {
    "name": "decorated",
    "description": "A tool with icons, _meta and execution",
    "inputSchema": {"type": "object"},
    "icons": [
        {"src": "https://example.org/probe.png", "mimeType": "image/png", "sizes": ["48x48"]}
    ],
    "execution": {"taskSupport": "optional"},
    "_meta": {"ui/resourceUri": "ui://probe/panel", "probe/version": 3},
    "server": "probe",
    "toolbox": "dev",
}


@pytest.fixture
def probe(make_setup) -> TenantSetup:
    setup = make_setup()
    add_relay_probe(setup.toolbox("dev"))
    return setup


def decorated(data: dict[str, Any]) -> dict[str, Any]:
    [entry] = [tool for tool in data["tools"] if tool["name"] == "decorated"]
    return entry


async def test_icons_meta_and_execution_reach_open_toolbox(live_gateway, probe):
    async with live_gateway.session(probe.key) as session:
        listed = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert decorated(listed) == DECORATED


async def test_icons_meta_and_execution_reach_a_2026_client(live_gateway, probe):
    async with live_gateway.client(probe.key) as client:
        listed = payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert decorated(listed) == DECORATED
