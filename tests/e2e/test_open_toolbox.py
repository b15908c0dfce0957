"""open_toolbox: result shape, filters, order, pagination, idempotence, failures."""

import sys
import uuid

import pytest

from tests.harness.procs import processes_with
from tests.harness.results import error_of, payload

pytestmark = pytest.mark.anyio

FIXTURE_TOOLS = [
    "echo",
    "add",
    "image",
    "mixed",
    "fail",
    "slow",
    "env",
    "crash",
    "progress",
    "headers",
    "explode",
    "shout",
    "big",
    "garbage",
    "wait_cancel",
    "raise_code",
    "leak",
]


async def test_result_lists_downstream_tools_unchanged_with_server_and_toolbox(
    live_gateway, amake_setup
):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev", "Development environment tools")
    await setup.afixture_server(dev, "fixture", tool_filters=["echo", "add"])
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert data["toolbox"] == "dev"
    assert data["description"] == "Development environment tools"
    assert data["servers_connected"] == 1
    assert "_errors" not in data
    echo, add = data["tools"]
    assert echo == {
        "name": "echo",
        "description": "Echo the text back",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "server": "fixture",
        "toolbox": "dev",
    }
    assert add["name"] == "add"
    assert add["title"] == "Adder"
    assert add["outputSchema"] == {"type": "object", "properties": {"sum": {"type": "number"}}}
    assert add["annotations"] == {"readOnlyHint": True}


async def test_servers_in_configured_order_and_same_names_told_apart(live_gateway, amake_setup):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    # Created in the opposite order of their positions.
    await setup.afixture_server(dev, "second", "--prefix", "B:", position=2, tool_filters=["echo"])
    await setup.afixture_server(dev, "first", "--prefix", "A:", position=1, tool_filters=["echo"])
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert [(t["server"], t["name"]) for t in data["tools"]] == [
        ("first", "echo"),
        ("second", "echo"),
    ]
    assert [t["description"] for t in data["tools"]] == [
        "A:Echo the text back",
        "B:Echo the text back",
    ]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (["*"], FIXTURE_TOOLS),
        (
            ["add", "*"],
            FIXTURE_TOOLS,
        ),
        (["add", "echo", "no_such_tool"], ["echo", "add"]),
        ([], []),
    ],
)
async def test_tool_filters(live_gateway, amake_setup, filters, expected):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "fixture", tool_filters=filters)
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert [tool["name"] for tool in data["tools"]] == expected
    assert data["servers_connected"] == 1


async def test_follows_downstream_pagination_to_the_end(live_gateway, amake_setup):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "many", "--tools", "230", "--page-size", "25")
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    names = [tool["name"] for tool in data["tools"]]
    assert len(names) == len(FIXTURE_TOOLS) + 230
    assert names[-1] == "tool_229"
    assert len(set(names)) == len(names)


async def test_open_is_idempotent_and_does_not_reconnect(live_gateway, amake_setup):
    marker = uuid.uuid4().hex
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "fixture", "--prefix", marker)
    async with live_gateway.session(setup.key) as session:
        first = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        pids = processes_with(marker)
        second = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        assert processes_with(marker) == pids
    assert len(pids) == 1
    assert first == second


async def test_empty_toolbox_opens_with_no_tools(live_gateway, amake_setup):
    setup = await amake_setup()
    await setup.atoolbox("empty", "Nothing yet")
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "empty"}))
    assert data == {
        "toolbox": "empty",
        "description": "Nothing yet",
        "servers_connected": 0,
        "tools": [],
    }


async def test_disabled_servers_are_left_out(live_gateway, amake_setup):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "on", tool_filters=["echo"])
    await setup.afixture_server(dev, "off", tool_filters=["echo"], enabled=False)
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert [tool["server"] for tool in data["tools"]] == ["on"]


async def test_partial_failure_lists_errors_and_leaves_no_process(live_gateway, amake_setup):
    marker = uuid.uuid4().hex
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "good", tool_filters=["echo"], position=1)
    await setup.afixture_server(dev, "database", "--exit-at-start", "--prefix", marker, position=2)
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert data["servers_connected"] == 1
    assert [tool["server"] for tool in data["tools"]] == ["good"]
    [line] = data["_errors"]
    assert line.startswith("Failed to connect to server 'database' in toolbox 'dev': ")
    assert processes_with(marker) == []


async def test_every_server_failing_is_an_error(live_gateway, amake_setup):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "a", "--exit-at-start", position=1)
    await dev.servers.acreate(name="b", position=2, command="no-such-command-workbench")
    async with live_gateway.session(setup.key) as session:
        code, text = error_of(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert code == "CONNECTION_FAILED"
    assert text == (
        "Error opening toolbox 'dev': Failed to connect to server 'a' in toolbox 'dev': "
        "the server exited during start-up (exit code 2)\n"
        "Failed to connect to server 'b' in toolbox 'dev': the command was not found"
    )


async def test_unset_environment_reference_names_variable_and_field(live_gateway, amake_setup):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    token = {"API_TOKEN": "${WORKBENCH_TEST_UNSET_TOKEN}"}
    await setup.afixture_server(dev, "needs_token", env=token)
    async with live_gateway.session(setup.key) as session:
        code, text = error_of(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert code == "CONNECTION_FAILED"
    assert text == (
        "Error opening toolbox 'dev': Failed to connect to server 'needs_token' in toolbox "
        "'dev': environment variable 'WORKBENCH_TEST_UNSET_TOKEN' is not set (in env.API_TOKEN)"
    )


async def test_server_that_never_initializes_is_bounded_by_connect_timeout(
    live_gateway, amake_setup, settings
):
    marker = uuid.uuid4().hex
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "good", tool_filters=["echo"], position=1)
    async with live_gateway.session(setup.key) as session:
        # The good server connects first, under the default timeout (however loaded the
        # machine), and stays pooled: only the mute one meets the short timeout.
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        await setup.afixture_server(
            dev, "mute", "--hang-initialize", "--prefix", marker, position=2
        )
        live_gateway.gateway.pool.connect_timeout = 2.0
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert data["_errors"] == [
        "Failed to connect to server 'mute' in toolbox 'dev': "
        "the server did not answer initialize in time"
    ]
    assert data["servers_connected"] == 1
    assert processes_with(marker) == []


# The spec's error table


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        (
            {"toolbox": "dev", "extra_field": 1},
            "Invalid parameters: Unrecognized key: 'extra_field'",
        ),
        ({"toolbox_name": "dev"}, "Invalid parameters: Unrecognized key: 'toolbox_name'"),
        ({"toolbox": ""}, "Invalid parameters: toolbox cannot be empty"),
        ({"toolbox": "   "}, "Invalid parameters: toolbox cannot be empty"),
        ({}, "Invalid parameters: toolbox is required"),
        ({"toolbox": 7}, "Invalid parameters: toolbox must be a string"),
    ],
)
async def test_invalid_parameters(live_gateway, amake_setup, arguments, text):
    setup = await amake_setup()
    await setup.atoolbox("dev")
    async with live_gateway.session(setup.key) as session:
        result = await session.call_tool("open_toolbox", arguments)
    assert error_of(result) == ("INVALID_PARAMETERS", text)


async def test_unknown_toolbox_lists_available(live_gateway, amake_setup):
    setup = await amake_setup()
    await setup.atoolbox("prod")
    await setup.atoolbox("dev")
    async with live_gateway.session(setup.key) as session:
        result = await session.call_tool("open_toolbox", {"toolbox": "invalid"})
    assert error_of(result) == (
        "TOOLBOX_NOT_FOUND",
        "Error: Toolbox 'invalid' not found. Available toolboxes: dev, prod",
    )
    assert result.structured_content["error"]["details"] == {
        "toolbox": "invalid",
        "available": ["dev", "prod"],
    }


async def test_toolbox_names_are_case_sensitive(live_gateway, amake_setup):
    setup = await amake_setup()
    await setup.atoolbox("dev")
    async with live_gateway.session(setup.key) as session:
        result = await session.call_tool("open_toolbox", {"toolbox": "DEV"})
    assert error_of(result)[0] == "TOOLBOX_NOT_FOUND"


async def test_works_for_2026_clients(live_gateway, amake_setup):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "fixture", tool_filters=["echo"])
    async with live_gateway.client(setup.key) as client:
        data = payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert [tool["name"] for tool in data["tools"]] == ["echo"]


def test_fixture_server_is_this_python():
    # The downstream fixture runs under the interpreter running the tests.
    assert sys.executable
