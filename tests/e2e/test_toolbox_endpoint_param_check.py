"""A 2026-07-28 call through the toolbox endpoint starts only the server it calls.

Before dispatching a `tools/call` with arguments, the SDK checks the request's
`Mcp-Param-*` headers against the tool's `inputSchema`, which it reads from the server's
`get_tool_input_schema`, else by running its whole `tools/list`: on a toolbox endpoint that
would connect every server of the toolbox before each call. The endpoint answers it from
the live connections (`toolbox_server.input_schema`), so a call reaches its own server
alone."""

from __future__ import annotations

import mcp_types as types
import pytest

from tests.harness.live import TenantSetup, add_relay_probe
from tests.harness.results import text_of
from tests.harness.toolbox_world import endpoint
from tests.harness.waits import eventually

pytestmark = [pytest.mark.anyio]


@pytest.fixture
def two_servers(make_setup) -> TenantSetup:
    setup = make_setup()
    toolbox = setup.toolbox("dev")
    add_relay_probe(toolbox, name="one", pinning="off")
    add_relay_probe(toolbox, name="two", pinning="off")
    return setup


async def test_a_call_with_arguments_starts_only_its_own_server(live_gateway, two_servers):
    pool = live_gateway.gateway.pool

    def running() -> list[str]:
        return sorted(conn.ref.server for conn in pool.connections())

    dev = endpoint(live_gateway, "acme", "dev")
    async with dev.client(two_servers.key) as client:  # discover connects both (instructions)
        for conn in pool.connections():
            if conn.ref.server == "two":
                conn.stop()
        await eventually(lambda: running() == ["one"], 30, "server two to stop")
        for _ in range(2):
            # The request itself: the client's call_tool would list the tools first, to
            # check the result against an outputSchema.
            request = types.CallToolRequest(
                params=types.CallToolRequestParams(name="one__echo_meta", arguments={"n": 42})
            )
            answer = await client.session.send_request(request, types.CallToolResult)
            assert not answer.is_error, text_of(answer)
    assert running() == ["one"]
