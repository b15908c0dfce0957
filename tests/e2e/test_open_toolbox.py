"""open_toolbox: result shape, filters, order, pagination, idempotence, failures, against
one gateway and one tenant's toolboxes for the whole module (each test with a key of its
own, so with nothing open)."""

import sys
import uuid

import pytest
from asgiref.sync import sync_to_async
from mcp_types import CallToolResult

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.procs import processes_with
from tests.harness.results import error_of, payload

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("open_toolbox")]

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

# (filters, the tools they let through), a toolbox each: "filters-0", ...
FILTER_CASES = [
    (["*"], FIXTURE_TOOLS),
    (["add", "*"], FIXTURE_TOOLS),
    (["add", "echo", "no_such_tool"], ["echo", "add"]),
    ([], []),
]
# Markers in the command lines of the servers whose processes a test counts.
IDEMPOTENT, PARTIAL, MUTE = (uuid.uuid4().hex for _ in range(3))


def make_world() -> TenantSetup:
    setup = make_tenant_setup()
    dev = setup.toolbox("dev", "Development environment tools")
    setup.fixture_server(dev, "fixture", tool_filters=["echo", "add"])
    ordered = setup.toolbox("ordered")
    # Created in the opposite order of their positions.
    setup.fixture_server(ordered, "second", "--prefix", "B:", position=2, tool_filters=["echo"])
    setup.fixture_server(ordered, "first", "--prefix", "A:", position=1, tool_filters=["echo"])
    for index, (filters, _) in enumerate(FILTER_CASES):
        setup.fixture_server(setup.toolbox(f"filters-{index}"), "fixture", tool_filters=filters)
    many = setup.toolbox("many")
    setup.fixture_server(many, "many", "--tools", "230", "--page-size", "25")
    setup.fixture_server(setup.toolbox("idempotent"), "fixture", "--prefix", IDEMPOTENT)
    setup.toolbox("empty", "Nothing yet")
    switches = setup.toolbox("switches")
    setup.fixture_server(switches, "on", tool_filters=["echo"])
    setup.fixture_server(switches, "off", tool_filters=["echo"], enabled=False)
    partial = setup.toolbox("partial")
    setup.fixture_server(partial, "good", tool_filters=["echo"], position=1)
    setup.fixture_server(partial, "database", "--exit-at-start", "--prefix", PARTIAL, position=2)
    failing = setup.toolbox("failing")
    setup.fixture_server(failing, "a", "--exit-at-start", position=1)
    failing.servers.create(name="b", position=2, command="no-such-command-workbench")
    token = {"API_TOKEN": "${WORKBENCH_TEST_UNSET_TOKEN}"}
    setup.fixture_server(setup.toolbox("needs-token"), "needs_token", env=token)
    setup.fixture_server(setup.toolbox("slow-start"), "good", tool_filters=["echo"], position=1)
    return setup


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    return make_world()


@pytest.fixture
def setup(world) -> TenantSetup:
    """The module's tenant, with a key no other test used."""
    return world.new_key()


@pytest.fixture
def live_gateway(module_gateway) -> LiveGateway:
    return module_gateway


async def open_result(live_gateway: LiveGateway, key: str, arguments: dict) -> CallToolResult:
    """open_toolbox's answer to `arguments`, in a session of its own."""
    async with live_gateway.session(key) as session:
        return await session.call_tool("open_toolbox", arguments)


async def open_toolbox(live_gateway: LiveGateway, key: str, toolbox: str) -> dict:
    return payload(await open_result(live_gateway, key, {"toolbox": toolbox}))


async def test_result_lists_downstream_tools_unchanged_with_server_and_toolbox(live_gateway, setup):
    data = await open_toolbox(live_gateway, setup.key, "dev")
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


async def test_servers_in_configured_order_and_same_names_told_apart(live_gateway, setup):
    data = await open_toolbox(live_gateway, setup.key, "ordered")
    assert [(t["server"], t["name"]) for t in data["tools"]] == [
        ("first", "echo"),
        ("second", "echo"),
    ]
    assert [t["description"] for t in data["tools"]] == [
        "A:Echo the text back",
        "B:Echo the text back",
    ]


@pytest.mark.parametrize(("index", "expected"), [(i, e) for i, (_, e) in enumerate(FILTER_CASES)])
async def test_tool_filters(live_gateway, setup, index, expected):
    data = await open_toolbox(live_gateway, setup.key, f"filters-{index}")
    assert [tool["name"] for tool in data["tools"]] == expected
    assert data["servers_connected"] == 1


async def test_follows_downstream_pagination_to_the_end(live_gateway, setup):
    data = await open_toolbox(live_gateway, setup.key, "many")
    names = [tool["name"] for tool in data["tools"]]
    assert len(names) == len(FIXTURE_TOOLS) + 230
    assert names[-1] == "tool_229"
    assert len(set(names)) == len(names)


async def test_open_is_idempotent_and_does_not_reconnect(live_gateway, setup):
    async with live_gateway.session(setup.key) as session:
        first = payload(await session.call_tool("open_toolbox", {"toolbox": "idempotent"}))
        pids = processes_with(IDEMPOTENT)
        second = payload(await session.call_tool("open_toolbox", {"toolbox": "idempotent"}))
        assert processes_with(IDEMPOTENT) == pids
    assert len(pids) == 1
    assert first == second


async def test_empty_toolbox_opens_with_no_tools(live_gateway, setup):
    data = await open_toolbox(live_gateway, setup.key, "empty")
    assert data == {
        "toolbox": "empty",
        "description": "Nothing yet",
        "servers_connected": 0,
        "tools": [],
    }


async def test_disabled_servers_are_left_out(live_gateway, setup):
    data = await open_toolbox(live_gateway, setup.key, "switches")
    assert [tool["server"] for tool in data["tools"]] == ["on"]


async def test_partial_failure_lists_errors_and_leaves_no_process(live_gateway, setup):
    data = await open_toolbox(live_gateway, setup.key, "partial")
    assert data["servers_connected"] == 1
    assert [tool["server"] for tool in data["tools"]] == ["good"]
    [line] = data["_errors"]
    assert line.startswith("Failed to connect to server 'database' in toolbox 'partial': ")
    assert processes_with(PARTIAL) == []


async def test_every_server_failing_is_an_error(live_gateway, setup):
    result = await open_result(live_gateway, setup.key, {"toolbox": "failing"})
    assert error_of(result) == (
        "CONNECTION_FAILED",
        "Error opening toolbox 'failing': Failed to connect to server 'a' in toolbox 'failing': "
        "the server exited during start-up (exit code 2)\n"
        "Failed to connect to server 'b' in toolbox 'failing': the command was not found",
    )


async def test_unset_environment_reference_names_variable_and_field(live_gateway, setup):
    result = await open_result(live_gateway, setup.key, {"toolbox": "needs-token"})
    assert error_of(result) == (
        "CONNECTION_FAILED",
        "Error opening toolbox 'needs-token': Failed to connect to server 'needs_token' in "
        "toolbox 'needs-token': environment variable 'WORKBENCH_TEST_UNSET_TOKEN' is not set "
        "(in env.API_TOKEN)",
    )


async def test_server_that_never_initializes_is_bounded_by_connect_timeout(live_gateway, setup):
    pool = live_gateway.gateway.pool
    async with live_gateway.session(setup.key) as session:
        # The good server connects first, under the default timeout (however loaded the
        # machine), and stays pooled: only the mute one meets the short timeout.
        payload(await session.call_tool("open_toolbox", {"toolbox": "slow-start"}))
        slow_start = await setup.tenant.toolboxes.aget(name="slow-start")
        await setup.afixture_server(
            slow_start, "mute", "--hang-initialize", "--prefix", MUTE, position=2
        )
        default_timeout, pool.connect_timeout = pool.connect_timeout, 2.0
        try:
            data = payload(await session.call_tool("open_toolbox", {"toolbox": "slow-start"}))
        finally:
            pool.connect_timeout = default_timeout
    assert data["_errors"] == [
        "Failed to connect to server 'mute' in toolbox 'slow-start': "
        "the server did not answer initialize in time"
    ]
    assert data["servers_connected"] == 1
    assert processes_with(MUTE) == []


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
async def test_invalid_parameters(live_gateway, setup, arguments, text):
    result = await open_result(live_gateway, setup.key, arguments)
    assert error_of(result) == ("INVALID_PARAMETERS", text)


async def test_unknown_toolbox_lists_available(live_gateway, setup):
    available = await sync_to_async(
        lambda: sorted(setup.tenant.toolboxes.values_list("name", flat=True))
    )()
    result = await open_result(live_gateway, setup.key, {"toolbox": "invalid"})
    assert error_of(result) == (
        "TOOLBOX_NOT_FOUND",
        f"Error: Toolbox 'invalid' not found. Available toolboxes: {', '.join(available)}",
    )
    assert result.structured_content["error"]["details"] == {
        "toolbox": "invalid",
        "available": available,
    }


async def test_toolbox_names_are_case_sensitive(live_gateway, setup):
    result = await open_result(live_gateway, setup.key, {"toolbox": "DEV"})
    assert error_of(result)[0] == "TOOLBOX_NOT_FOUND"


async def test_works_for_2026_clients(live_gateway, setup):
    async with live_gateway.client(setup.key) as client:
        data = payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert [tool["name"] for tool in data["tools"]] == ["echo", "add"]


def test_fixture_server_is_this_python():
    # The downstream fixture runs under the interpreter running the tests.
    assert sys.executable
