"""GET /tenants/{slug}/tools/search: what a model would find, as open_toolbox's entries, within
the caller's tenants only; its refusals as problems with exact texts."""

from __future__ import annotations

import pytest

from tests.api.conftest import problem
from tests.toolboxes.search_world import search_world

URL = "/tenants/acme/tools/search"


@pytest.fixture
def world(acme, globex, tokens):
    return search_world(acme, globex)


def test_a_member_finds_the_tools_a_model_would(world, api):
    response = api("acme_viewer")("GET", f"{URL}?q=current+time&limit=1")
    assert response.status_code == 200
    assert response.json() == {
        "query": "current time",
        "tools": [
            {
                "name": "get_current_time",
                "description": "Current time in a timezone",
                "inputSchema": {
                    "type": "object",
                    "properties": {"timezone": {"type": "string", "description": "IANA name"}},
                },
                "server": "acme-time",
                "toolbox": "acme-tools",
            }
        ],
        "not_searched": [
            {"toolbox": "acme-tools", "server": "acme-remote", "reason": "never listed"},
            {"toolbox": "files", "server": "legacy", "reason": "its last check failed"},
        ],
    }


def test_filters_holds_and_one_toolbox(world, api):
    call = api("acme_admin")
    found = call("GET", f"{URL}?q=file+disk&limit=50").json()["tools"]
    assert [(tool["toolbox"], tool["name"]) for tool in found] == [("files", "read_file")]
    answer = call("GET", f"{URL}?q=time&toolbox=files").json()
    assert answer["tools"] == []
    assert answer["not_searched"] == [
        {"toolbox": "files", "server": "legacy", "reason": "its last check failed"}
    ]
    found = call("GET", f"{URL}?q=convert+between+timezones&toolbox=acme-tools").json()["tools"]
    assert [tool["name"] for tool in found] == ["convert_time", "get_current_time"]


def test_no_match_is_an_empty_list(world, api):
    answer = api("acme_admin")("GET", f"{URL}?q=zebra+migration").json()
    assert answer["query"] == "zebra migration" and answer["tools"] == []


@pytest.mark.parametrize("query", ["", "%20%20"])
def test_a_blank_query_is_refused(world, api, query):
    body = problem(
        api("acme_admin")("GET", f"{URL}?q={query}"), 422, "The query (q) cannot be empty."
    )
    assert body["errors"] == [
        {"field": "q", "message": "Say what the tool should do, in a few words."}
    ]


def test_a_missing_query_and_a_limit_out_of_range_are_refused(world, api):
    call = api("acme_admin")
    body = problem(call("GET", URL), 422, "1 invalid field.")
    assert body["errors"] == [{"field": "q", "message": "Field required"}]
    for limit, message in (
        ("0", "Input should be greater than or equal to 1"),
        ("51", "Input should be less than or equal to 50"),
        ("ten", "Input should be a valid integer, unable to parse string as an integer"),
    ):
        body = problem(call("GET", f"{URL}?q=time&limit={limit}"), 422, "1 invalid field.")
        assert body["errors"] == [{"field": "limit", "message": message}]


def test_an_unknown_toolbox_is_missing(world, api):
    response = api("acme_admin")("GET", f"{URL}?q=time&toolbox=nope")
    problem(response, 404, "No toolbox 'nope'.")


def test_another_tenants_tools_are_missing(world, api):
    problem(api("globex_admin")("GET", f"{URL}?q=time"), 404, "No tenant 'acme'.")
    problem(api("globex_admin")("GET", f"{URL}?q=time&toolbox=files"), 404, "No tenant 'acme'.")
    found = api("globex_admin")("GET", "/tenants/globex/tools/search?q=current+time").json()
    assert [(tool["toolbox"], tool["name"]) for tool in found["tools"]] == [
        ("globex-tools", "get_current_time")
    ]
