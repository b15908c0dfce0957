"""Bounded discovery: a server's tools/list past the gateway's bounds fails that server's
connection with a reason naming the bound; the open_toolbox result as a whole is bounded by
WORKBENCH_MAX_RESULT_BYTES. Defaults (1,000 tools, 100 pages, 4 MiB) are the ones tested."""

from __future__ import annotations

import pytest

from tests.harness.results import error_of, payload

# Between the gateway and its downstream servers (processes, networks): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

LINE = "Failed to connect to server 'huge' in toolbox 'dev': "


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (
            ("--tools", "1000", "--page-size", "500"),
            "the server offers more than 1000 tools (the gateway's limit)",
        ),
        (
            ("--tools", "90", "--page-size", "1"),
            "the server lists its tools in more than 100 pages (the gateway's limit)",
        ),
        (
            ("--tools", "300", "--page-size", "50", "--description-size", "15000"),
            "the server's tool definitions exceed 4194304 bytes (the gateway's limit)",
        ),
    ],
    ids=["tools", "pages", "bytes"],
)
async def test_a_tool_list_past_a_bound_fails_that_server(live_gateway, amake_setup, args, reason):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "small", tool_filters=["echo"], position=1)
    await setup.afixture_server(dev, "huge", *args, position=2)
    async with live_gateway.session(setup.key) as session:
        result = await session.call_tool("open_toolbox", {"toolbox": "dev"})
    data = payload(result)
    assert data["servers_connected"] == 1
    assert data["_errors"] == [LINE + reason]
    assert len(data["_incidents"]["huge"]) == 12
    assert [tool["name"] for tool in data["tools"]] == ["echo"]


async def test_the_open_result_is_bounded_as_a_whole(live_gateway, amake_setup):
    live_gateway.gateway.pool.max_result_bytes = 20_000
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "many", "--tools", "100", "--description-size", "300")
    async with live_gateway.session(setup.key) as session:
        result = await session.call_tool("open_toolbox", {"toolbox": "dev"})
        use = await session.call_tool(
            "use_tool", {"tool": {"toolbox": "dev", "server": "many", "name": "echo"}}
        )
    code, text = error_of(result)
    assert code == "DOWNSTREAM_ERROR"
    assert text.startswith("Error opening toolbox 'dev': the tool list is too large (")
    size = int(text.split("(")[1].split(" ")[0])
    assert size > 20_000
    assert text.endswith(f"({size} bytes; the limit is 20000)")
    # Not opened: a result the client never got opens nothing.
    assert error_of(use)[0] == "TOOLBOX_NOT_OPEN"
