"""The search room alone: its tokenizer, a tool's document and a tenant's index."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcp_gateway.search.documents import Described
from mcp_gateway.search.index import ToolIndex
from mcp_gateway.search.tokens import tokens

BOX = Described("dev", "Development tools")


def tool(name: str, description: str = "", **parameters: str) -> dict[str, Any]:
    """A definition as `open_toolbox` lists it."""
    properties = {key: {"type": "string", "description": text} for key, text in parameters.items()}
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties},
    }


def names(index: ToolIndex, query: str, allowed: list[str], limit: int = 10) -> list[str]:
    return [f"{hit.server_key}:{hit.tool}" for hit in index.search(query, allowed, limit)]


def test_names_split_at_underscores_camel_case_and_digits():
    assert tokens("get_current_time", query=True).words == ("current", "time")  # `get`: a stopword
    assert tokens("getCurrentTime").words == ("getcurrenttim", "current", "time")
    assert tokens("HTTPServer2Go").words == ("httpserver2go", "http", "server", "2", "go")


def test_a_request_s_filler_words_are_not_searched_for():
    query = "Could you please suggest which of them I should use, because we need it?"
    assert tokens(query, query=True).words == ("suggest",)  # Snowball's English stopwords
    assert tokens("Was ist das Wetter?", query=True).words == ("wetter",)


def test_neighbouring_words_make_pairs_across_stopwords_and_within_a_name():
    assert tokens("Detect objects in images").pairs == ("detect_object", "object_imag")
    assert tokens("getCurrentTime zone").pairs == ("current_time", "time_zone")
    assert tokens("torch.hub.load").pairs == ("torch_hub", "hub_load")  # a dotted API name
    assert tokens("天气 forecast today").pairs == ("forecast_today",)  # CJK breaks the chain


def test_a_phrase_ranks_the_tool_that_has_its_words_together_first():
    index = ToolIndex()
    index.replace_server(
        "dev/misc",
        BOX,
        Described("misc"),
        [
            tool("a_first", "Classify the text of an image; detect the language of speech."),
            tool("b_second", "Detect the language of a text; classify an image."),
        ],
    )
    assert names(index, "classify an image", ["dev/misc"])[0] == "dev/misc:b_second"
    assert names(index, "classify text", ["dev/misc"])[0] == "dev/misc:a_first"


def test_a_query_finds_a_tool_by_a_part_of_its_name():
    index = ToolIndex()
    index.replace_server(
        "dev/misc",
        BOX,
        Described("misc"),
        [tool("getCurrentTime"), tool("HTTPServer2Go"), tool("list_files")],
    )
    assert names(index, "current time", ["dev/misc"])[0] == "dev/misc:getCurrentTime"
    assert names(index, "http server", ["dev/misc"])[0] == "dev/misc:HTTPServer2Go"
    assert names(index, "getcurrenttime", ["dev/misc"]) == ["dev/misc:getCurrentTime"]


def test_a_chinese_description_and_a_german_compound_are_found():
    index = ToolIndex()
    index.replace_server(
        "dev/weather",
        BOX,
        Described("weather"),
        [
            tool("get_weather_forecast", "获取指定城市未来三天的天气预报、包括温度和降水概率。"),
            tool(
                "wettervorhersage_abrufen", "Liefert die Vorhersage für eine Stadt.", stadt="Name"
            ),
            tool("translate", "Translate a text into another language"),
        ],
    )
    assert names(index, "北京明天的天气", ["dev/weather"])[0] == "dev/weather:get_weather_forecast"
    assert names(index, "Wetter", ["dev/weather"]) == ["dev/weather:wettervorhersage_abrufen"]


def test_replacing_a_servers_tools_removes_its_old_ones_at_once_and_keeps_the_others():
    index = ToolIndex()
    index.replace_server("dev/files", BOX, Described("files"), [tool("read_file", "Read a file")])
    index.replace_server("dev/notes", BOX, Described("notes"), [tool("read_note", "Read a note")])
    allowed = ["dev/files", "dev/notes"]
    assert sorted(names(index, "read", allowed)) == ["dev/files:read_file", "dev/notes:read_note"]

    index.replace_server("dev/files", BOX, Described("files"), [tool("open_file", "Read a file")])
    assert sorted(names(index, "read", allowed)) == ["dev/files:open_file", "dev/notes:read_note"]
    assert names(index, "read_file", allowed)[0] == "dev/files:open_file"  # by its description

    index.remove_server("dev/files")
    assert names(index, "read", allowed) == ["dev/notes:read_note"]


def test_many_servers_are_replaced_in_one_write():
    index = ToolIndex()
    index.replace_server("dev/old", BOX, Described("old"), [tool("read_file", "Read a file")])
    index.replace_servers(
        [
            ("dev/old", BOX, Described("old"), []),
            ("dev/a", BOX, Described("a"), [tool("read_file", "Read a file")]),
            ("dev/b", BOX, Described("b"), iter([tool("read_note", "Read a note")])),
        ]
    )
    allowed = ["dev/old", "dev/a", "dev/b"]
    assert sorted(names(index, "read", allowed)) == ["dev/a:read_file", "dev/b:read_note"]


def test_a_tool_of_a_server_not_allowed_is_never_returned():
    index = ToolIndex()
    same = [tool("get_current_time", "Current time in a timezone", timezone="IANA name")]
    index.replace_server("dev/time", BOX, Described("time"), same)
    index.replace_server("prod/time", Described("prod"), Described("time"), same)
    assert names(index, "current time", ["prod/time"]) == ["prod/time:get_current_time"]
    assert names(index, "current time", ["dev/time", "prod/time"], 1)[0].endswith("time")
    assert names(index, "current time", ["other/time"]) == []
    assert names(index, "current time", []) == []


def test_the_limit_is_honoured():
    index = ToolIndex()
    tools = [tool(f"report_{number}", "Build a sales report") for number in range(30)]
    index.replace_server("dev/reports", BOX, Described("reports"), tools)
    assert len(index.search("sales report", ["dev/reports"], 7)) == 7
    assert len(index.search("sales report", ["dev/reports"], 50)) == 30
    assert index.search("sales report", ["dev/reports"], 0) == []


def test_an_empty_index_and_an_empty_query_answer_nothing():
    assert ToolIndex().search("anything", ["dev/time"], 10) == []
    index = ToolIndex()
    index.replace_server("dev/time", BOX, Described("time"), [tool("get_current_time")])
    assert index.search("", ["dev/time"], 10) == []
    assert index.search("the of und", ["dev/time"], 10) == []  # stopwords only


def test_a_definition_of_the_wrong_shape_is_read_as_far_as_it_goes():
    index = ToolIndex()
    odd: list[dict[str, Any]] = [
        {"name": "ping", "description": None, "inputSchema": {"properties": ["x"]}},
        {"name": "pong", "title": 3, "inputSchema": {"properties": {"host": "not a mapping"}}},
        {"description": "no name: cannot be called, so not indexed"},
    ]
    index.replace_server("dev/net", BOX, Described("net"), odd)
    assert names(index, "ping", ["dev/net"]) == ["dev/net:ping"]
    assert names(index, "host", ["dev/net"]) == ["dev/net:pong"]
    assert names(index, "indexed", ["dev/net"]) == []


def test_a_search_during_a_replacement_sees_all_old_or_all_new_tools():
    """What index.py promises one process: a write is one commit, and a search reads one
    commit's segments, never half of a server's replacement."""
    index = ToolIndex()
    old = [tool(f"old_{number}", "Sync the calendar") for number in range(20)]
    new = [tool(f"new_{number}", "Sync the calendar") for number in range(20)]
    index.replace_server("dev/cal", BOX, Described("cal"), old)
    writes_done = threading.Event()

    def write() -> None:
        try:
            for turn in range(30):
                index.replace_server("dev/cal", BOX, Described("cal"), new if turn % 2 else old)
        finally:
            writes_done.set()

    writer = threading.Thread(target=write)
    writer.start()
    seen = set()
    try:
        while not writes_done.is_set():
            hits = index.search("calendar", ["dev/cal"], 50)
            found = {hit.tool.split("_")[0] for hit in hits}
            assert len(hits) == 20 and len(found) == 1, found  # never none, never a mix
            seen |= found
    finally:
        writer.join(timeout=30)
    assert not writer.is_alive()
    assert {hit.tool for hit in index.search("calendar", ["dev/cal"], 50)} == {
        entry["name"] for entry in new
    }  # the last of 30 writes (turn 29) put the new tools
    assert seen <= {"old", "new"}


def test_a_write_that_fails_half_way_changes_nothing_and_the_next_one_applies():
    class Failing(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            if key == "description":
                raise RuntimeError("a definition that cannot be read")
            return super().get(key, default)

    index = ToolIndex()
    index.replace_server("dev/files", BOX, Described("files"), [tool("read_file", "Read a file")])
    with pytest.raises(RuntimeError):
        index.replace_servers(
            [
                ("dev/files", BOX, Described("files"), []),
                ("dev/other", BOX, Described("other"), [tool("x"), Failing(name="bad")]),
            ]
        )
    assert names(index, "read file", ["dev/files", "dev/other"]) == ["dev/files:read_file"]
    index.replace_server("dev/other", BOX, Described("other"), [tool("write_file", "Write a file")])
    assert names(index, "write file", ["dev/other"]) == ["dev/other:write_file"]
