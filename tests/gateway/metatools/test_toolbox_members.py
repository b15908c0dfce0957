"""The toolbox endpoint's names and routes (`metatools.toolbox_members`), without servers:
`<server>__<tool>` names (too long or shared: left out), the tools a member exposes
(filters, approval holds), which server a name leads to, and URI templates."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest

from kernel.pins import APPROVE_ALL, Pins
from mcp_gateway.metatools.toolbox_members import (
    MAX_NAME,
    Member,
    ToolboxMembers,
    prefixed,
    template_pattern,
    unique,
)
from mcp_gateway.snapshots.servers import ServerConfig, ToolboxConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def tool(name: str) -> types.Tool:
    return types.Tool(name=name, input_schema={"type": "object"})


def listed(*names: str) -> Any:
    """A stand-in for a connection: its tools and their digests."""
    return SimpleNamespace(tools=[tool(n) for n in names], digests={n: f"d-{n}" for n in names})


def test_names_are_prefixed_by_the_server():
    assert prefixed("git", "git_status") == "git__git_status"


def test_a_name_two_servers_share_is_left_out_for_both():
    named = [("a__b__c", 1), ("a__b__c", 2), ("a__d", 3)]
    assert unique(named) == [("a__d", 3)]


def test_a_name_past_128_characters_is_left_out():
    fits = "s" * (MAX_NAME - 3) + "__t"
    too_long = "s" * (MAX_NAME - 2) + "__t"
    assert unique([(fits, 1), (too_long, 2)]) == [(fits, 1)]


def test_filters_and_approval_holds_apply():
    server = ServerConfig(
        name="files",
        transport="stdio",
        tool_filters=("echo", "add", "held"),
        pins=Pins(policy=APPROVE_ALL, approved={"echo": "d-echo", "add": "d-add"}),
    )
    member = Member(server, None, listed("echo", "add", "held", "filtered"))
    assert [t.name for t in ToolboxMembers.offered(member)] == ["echo", "add"]


def test_listed_tools_keep_everything_but_their_name():
    icon = types.Icon(src="https://example.org/i.png")
    own = types.Tool(
        name="add",
        title="Adder",
        description="Add",
        input_schema={"type": "object"},
        output_schema={"type": "object"},
        annotations=types.ToolAnnotations(read_only_hint=True),
        icons=[icon],
        _meta={"ui": {"resourceUri": "ui://adder"}},
    )
    conn = SimpleNamespace(tools=[own], digests={"add": "x"})
    server = ServerConfig(name="math", transport="stdio")
    members = ToolboxMembers(SimpleNamespace(pool=None, accounts=None, limiter=None))
    [served] = members.tools([Member(server, None, conn)])
    assert served.name == "math__add"
    assert served.model_dump(exclude={"name"}) == own.model_dump(exclude={"name"})


async def test_a_name_leads_to_the_one_server_it_starts_with():
    toolbox = ToolboxConfig(
        "dev",
        "",
        (ServerConfig(name="git", transport="stdio"), ServerConfig(name="gi", transport="stdio")),
    )
    members = ToolboxMembers(SimpleNamespace(pool=None, accounts=None, limiter=None))
    caller: Any = None
    assert await members.tool_ref(caller, toolbox, "git__git_log") == ("git", "git_log")
    assert await members.tool_ref(caller, toolbox, "gi__t") == ("gi", "t")
    assert await members.tool_ref(caller, toolbox, "nothing__x") is None
    assert await members.tool_ref(caller, toolbox, "git__") is None
    assert await members.tool_ref(caller, toolbox, "git__" + "x" * MAX_NAME) is None


@pytest.mark.parametrize(
    ("template", "uri", "fits"),
    [
        ("demo://resource/dynamic/text/{id}", "demo://resource/dynamic/text/7", True),
        ("demo://resource/dynamic/text/{id}", "demo://resource/dynamic/text/7/8", False),
        ("demo://resource/dynamic/text/{id}", "demo://resource/dynamic/blob/7", False),
        ("file:///{+path}", "file:///a/b/c.txt", True),
        ("search://q{?term,limit}", "search://q?term=x&limit=2", True),
        ("a.b://{x}", "aXb://1", False),  # the template's own characters are literal
    ],
)
def test_uri_templates_match_the_uris_they_expand_to(template, uri, fits):
    assert bool(template_pattern(template).fullmatch(uri)) is fits
