"""search_tools: what it finds and for whom, its result's shape, its arguments and errors,
against one gateway and two tenants for the whole module (each test with a key of its own,
so with nothing open)."""

import sys

import pytest
from mcp_types import CallToolResult

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.paths import SERVERS
from tests.harness.results import error_of, payload, text_of
from toolboxes.models import Server, Toolbox

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("search_tools")]

DESCRIBED = str(SERVERS / "described_server.py")
FORECAST = "get_forecast=Get the weather forecast for a city"
TOOLBOXES = ["files", "languages", "many", "ops", "weather"]  # as the tenant lists them


def described(setup: TenantSetup, toolbox: Toolbox, name: str, *tools: str, **fields) -> None:
    """A server of tests/servers/described_server.py offering `tools` (NAME=DESCRIPTION)."""
    server = Server(
        toolbox=toolbox, name=name, command=sys.executable, args=[DESCRIBED, *tools], **fields
    )
    server.full_clean()
    server.save()


def make_world() -> tuple[TenantSetup, TenantSetup]:
    acme = make_tenant_setup("acme")
    weather = acme.toolbox("weather", "Forecasts and climate")
    described(acme, weather, "forecast", FORECAST)
    files = acme.toolbox("files", "Files on disk")
    described(
        acme,
        files,
        "disk",
        "read_file=Read a file from the disk",
        "delete_everything=Delete every file on the disk",
        tool_filters=["read_file"],
    )
    described(
        acme,
        files,
        "vault",
        "shred_file=Shred a file so that nobody can ever read it",
        position=1,
        pinning="approve-all",  # nothing approved yet: every tool is held
    )
    described(
        acme,
        acme.toolbox("ops", "Operations"),
        "pager",
        "page_oncall=Page the on-call engineer about an incident",
    )
    described(
        acme,
        acme.toolbox("languages", "Other languages"),
        "words",
        "fanyi=将文本翻译成另一种语言",
        "wetter=Ruft die Wettervorhersage für eine Stadt ab",
        "unrelated=Count the characters of a text",
    )
    acme.fixture_server(acme.toolbox("many", "Numbered helpers"), "numbered", "--tools", "30")
    # Another tenant with the same toolbox, server and tool, and one tool of its own.
    other = make_tenant_setup("other")
    described(
        other,
        other.toolbox("weather", "Forecasts and climate"),
        "forecast",
        FORECAST,
        "lunar_forecast=Get the weather forecast for the moon, a city's sky at night",
    )
    return acme, other


@pytest.fixture(scope="module")
def world(module_db) -> tuple[TenantSetup, TenantSetup]:
    return make_world()


@pytest.fixture
def setup(world) -> TenantSetup:
    """acme, with a key no other test used."""
    return world[0].new_key()


@pytest.fixture
def other(world) -> TenantSetup:
    return world[1].new_key()


@pytest.fixture
def live_gateway(module_gateway) -> LiveGateway:
    return module_gateway


async def search_result(live_gateway: LiveGateway, key: str, arguments: dict) -> CallToolResult:
    async with live_gateway.session(key) as session:
        return await session.call_tool("search_tools", arguments)


async def search(live_gateway: LiveGateway, key: str, **arguments) -> dict:
    return payload(await search_result(live_gateway, key, arguments))


def found(data: dict) -> list[tuple[str, str, str]]:
    return [(tool["toolbox"], tool["server"], tool["name"]) for tool in data["tools"]]


async def test_a_found_tool_is_called_without_open_toolbox(live_gateway, setup):
    data = await search(live_gateway, setup.key, query="weather forecast for a city", limit=5)
    assert data["query"] == "weather forecast for a city"
    assert "_errors" not in data
    assert data["tools"][0] == {
        "name": "get_forecast",
        "description": "Get the weather forecast for a city",
        "inputSchema": {"type": "object"},
        "server": "forecast",
        "toolbox": "weather",
    }
    assert set(data) == {"query", "tools"}
    async with live_gateway.session(setup.key) as session:
        called = await session.call_tool(
            "use_tool",
            {
                "tool": {"toolbox": "weather", "server": "forecast", "name": "get_forecast"},
                "arguments": {"city": "Berlin"},
            },
        )
    assert not called.is_error
    assert text_of(called) == 'get_forecast: {"city": "Berlin"}'


async def test_a_tool_is_listed_as_open_toolbox_lists_it(live_gateway, setup):
    data = await search(live_gateway, setup.key, query="add two numbers", toolbox="many")
    [add] = [tool for tool in data["tools"] if tool["name"] == "add"]
    async with live_gateway.session(setup.key) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "many"}))
    assert add == next(tool for tool in opened["tools"] if tool["name"] == "add")
    assert add["title"] == "Adder" and add["annotations"] == {"readOnlyHint": True}


async def test_filtered_and_held_tools_are_never_found(live_gateway, setup):
    deleting = await search(live_gateway, setup.key, query="delete every file on the disk")
    names = [name for *_, name in found(deleting)]
    assert "read_file" in names and "delete_everything" not in names
    shredding = await search(live_gateway, setup.key, query="shred a file nobody can read")
    assert "shred_file" not in [name for *_, name in found(shredding)]
    async with live_gateway.session(setup.key) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "files"}))
    # The same tools open_toolbox leaves out (its filter, its hold).
    assert [tool["name"] for tool in opened["tools"]] == ["read_file"]
    assert opened["_held"] == [
        "Tool 'shred_file' in server 'vault' is waiting for an admin's approval"
    ]


async def test_another_tenants_tools_are_never_found(live_gateway, setup, other):
    # The other tenant's server is listed first, by its own search.
    theirs = await search(live_gateway, other.key, query="weather forecast for the moon")
    assert ("weather", "forecast", "lunar_forecast") in found(theirs)
    ours = await search(live_gateway, setup.key, query="weather forecast for the moon city")
    assert [name for *_, name in found(ours)].count("get_forecast") == 1
    assert "lunar_forecast" not in [name for *_, name in found(ours)]


async def test_a_key_limited_to_a_toolbox_finds_nothing_elsewhere(live_gateway, world):
    acme = world[0]
    ops = await Toolbox.objects.aget(tenant=acme.tenant, name="ops")
    limited = await _limited_key(acme, [ops])
    assert found(await search(live_gateway, limited, query="weather forecast for a city")) == []
    paged = await search(live_gateway, limited, query="page the on-call engineer")
    assert found(paged) == [("ops", "pager", "page_oncall")]
    refused = await search_result(
        live_gateway, limited, {"query": "forecast", "toolbox": "weather"}
    )
    assert error_of(refused) == (
        "FORBIDDEN",
        "Error: This API key may not use toolbox 'weather'. Available toolboxes: ops",
    )


async def _limited_key(acme: TenantSetup, toolboxes: list[Toolbox]) -> str:
    from asgiref.sync import sync_to_async

    return (await sync_to_async(acme.new_key)(toolboxes=toolboxes)).key


@pytest.mark.parametrize(
    ("query", "tool"),
    [("翻译文本", "fanyi"), ("Wettervorhersage für Berlin", "wetter"), ("Wetter Stadt", "wetter")],
)
async def test_descriptions_in_other_languages_are_found(live_gateway, setup, query, tool):
    data = await search(live_gateway, setup.key, query=query, limit=3)
    assert found(data)[0] == ("languages", "words", tool)


async def test_toolbox_argument_searches_that_toolbox_only(live_gateway, setup):
    assert found(await search(live_gateway, setup.key, query="forecast", toolbox="ops")) == []
    inside = await search(live_gateway, setup.key, query="forecast", toolbox="weather")
    assert found(inside) == [("weather", "forecast", "get_forecast")]


# Every match of "generated tool": the 30 generated tools, then `explode` ("not a tool").
@pytest.mark.parametrize(("limit", "count"), [(None, 10), (1, 1), (3, 3), (50, 31)])
async def test_limit_caps_the_answer(live_gateway, setup, limit, count):
    arguments = {"query": "generated tool"} | ({} if limit is None else {"limit": limit})
    data = await search(live_gateway, setup.key, **arguments)
    assert len(data["tools"]) == count
    generated = [tool["name"] for tool in data["tools"][:30]]
    assert all(name.startswith("tool_") for name in generated)


async def test_no_match_is_an_empty_success(live_gateway, setup):
    data = await search(live_gateway, setup.key, query="zzxqv")
    assert data == {"query": "zzxqv", "tools": []}


LIMIT_TEXT = "Invalid parameters: limit must be an integer from 1 to 50"


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        ({"query": "x", "extra_field": 1}, "Invalid parameters: Unrecognized key: 'extra_field'"),
        (
            {"query": "x", "limit": 0, "extra_field": 1},
            "Invalid parameters: Unrecognized key: 'extra_field'",
        ),
        ({"query": ""}, "Invalid parameters: query cannot be empty"),
        ({"query": "  \t"}, "Invalid parameters: query cannot be empty"),
        ({"query": "x", "limit": 0}, LIMIT_TEXT),
        ({"query": "x", "limit": 51}, LIMIT_TEXT),
        ({"query": "x", "limit": "5"}, LIMIT_TEXT),
        ({"query": "x", "limit": 2.5}, LIMIT_TEXT),
        ({"query": "x", "limit": True}, LIMIT_TEXT),
        ({"query": "x", "limit": None}, LIMIT_TEXT),
        ({}, "Invalid parameters: query is required"),
        ({"query": 7}, "Invalid parameters: query must be a string"),
        ({"query": "x", "toolbox": " "}, "Invalid parameters: toolbox cannot be empty"),
    ],
)
async def test_invalid_arguments(live_gateway, setup, arguments, text):
    result = await search_result(live_gateway, setup.key, arguments)
    assert error_of(result) == ("INVALID_PARAMETERS", text)


async def test_unknown_toolbox(live_gateway, setup):
    result = await search_result(live_gateway, setup.key, {"query": "x", "toolbox": "invalid"})
    assert error_of(result) == (
        "TOOLBOX_NOT_FOUND",
        f"Error: Toolbox 'invalid' not found. Available toolboxes: {', '.join(TOOLBOXES)}",
    )
    assert result.structured_content["error"]["details"]["toolbox"] == "invalid"


async def test_an_unknown_tool_names_the_three_meta_tools(live_gateway, setup):
    async with live_gateway.session(setup.key) as session:
        result = await session.call_tool("find_tools", {"query": "x"})
    assert error_of(result) == (
        "INVALID_PARAMETERS",
        "Unknown tool: 'find_tools'. This server offers open_toolbox, use_tool and search_tools.",
    )


async def test_a_2026_client_searches_then_calls(live_gateway, setup):
    """A stateless 2026-07-28 client (a new request each call): the search's opening of the
    toolbox is the key's, so the next request's use_tool finds it open."""
    async with live_gateway.client(setup.key) as client:
        found_tools = payload(await client.call_tool("search_tools", {"query": "page on-call"}))
        assert found(found_tools)[0] == ("ops", "pager", "page_oncall")
        called = await client.call_tool(
            "use_tool",
            {"tool": {"toolbox": "ops", "server": "pager", "name": "page_oncall"}},
        )
    assert text_of(called) == "page_oncall: {}"
