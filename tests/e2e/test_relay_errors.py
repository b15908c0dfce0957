"""A downstream JSON-RPC error through use_tool (issue 34): DOWNSTREAM_ERROR with the
server's own message as the text, and its code and data in `details.downstream_code` and
`details.downstream_data`. Both protocol generations."""

from __future__ import annotations

import pytest

from tests.harness.live import TenantSetup, add_relay_probe
from tests.harness.results import error_of, payload, use

pytestmark = [pytest.mark.anyio]

TEXT = (
    "Error executing tool 'refuse' in server 'probe' (toolbox 'dev'): "
    "Client did not declare the form elicitation capability"
)
DETAILS = {
    "toolbox": "dev",
    "server": "probe",
    "tool": "refuse",
    "downstream_code": -32021,
    "downstream_data": {"capability": "elicitation", "mode": "form"},
}


@pytest.fixture
def probe(make_setup) -> TenantSetup:
    setup = make_setup()
    add_relay_probe(setup.toolbox("dev"))
    return setup


async def test_a_json_rpc_error_keeps_its_code_and_data(live_gateway, probe):
    async with live_gateway.session(probe.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await session.call_tool("use_tool", use("dev", "probe", "refuse"))
    assert error_of(result) == ("DOWNSTREAM_ERROR", TEXT)
    assert result.structured_content["error"]["details"] == DETAILS


async def test_a_2026_client_gets_the_code_and_data_too(live_gateway, probe):
    async with live_gateway.client(probe.key) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        result = await client.call_tool("use_tool", use("dev", "probe", "refuse"))
    assert error_of(result) == ("DOWNSTREAM_ERROR", TEXT)
    assert result.structured_content["error"]["details"] == DETAILS


async def test_a_failure_the_gateway_describes_has_no_downstream_code(live_gateway, amake_setup):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "slow", timeout=1)
    async with live_gateway.session(setup.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        hung = await session.call_tool("use_tool", use("dev", "slow", "slow", {"seconds": 30}))
    code, _ = error_of(hung)
    details = hung.structured_content["error"]["details"]
    assert code == "TIMEOUT"
    assert "downstream_code" not in details and "downstream_data" not in details
