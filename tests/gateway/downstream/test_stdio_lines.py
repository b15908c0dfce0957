"""The bounded line reader of the stdio transport: lines whole, oversized ones cut."""

import json

from hypothesis import given
from hypothesis import strategies as st

from mcp_gateway.downstream.stdio import LineReader, oversized_message


def test_lines_across_chunks():
    reader = LineReader(limit=100)
    assert reader.feed('{"a"') == []
    assert reader.feed(': 1}\n{"b": 2}\n{"c"') == ['{"a": 1}', '{"b": 2}']
    assert reader.feed(": 3}\n") == ['{"c": 3}']


def test_an_oversized_line_is_counted_not_kept():
    reader = LineReader(limit=10)
    line = '{"jsonrpc":"2.0","id":7,"result":"' + "x" * 5000 + '"}'
    out = reader.feed(line[:100]) + reader.feed(line[100:] + "\nok\n")
    [(head, tail, size), after] = out
    assert size == len(line)
    assert head.startswith('{"jsonrpc":"2.0","id":7')
    assert tail.endswith('x"}')
    assert after == "ok"


@given(st.lists(st.text(alphabet="ab\n", max_size=40), max_size=20), st.integers(1, 30))
def test_every_line_comes_out_once_whole_or_counted(chunks, limit):
    reader = LineReader(limit)
    out = [line for chunk in chunks for line in reader.feed(chunk)]
    expected = "".join(chunks).split("\n")[:-1]
    assert len(out) == len(expected)
    for got, line in zip(out, expected, strict=True):
        assert got == line if len(line) <= limit else got[2] == len(line)


def test_the_error_answers_the_request_by_its_id_at_either_end():
    python_style = oversized_message('{"jsonrpc":"2.0","id":12,"result":{', "", 999, 100)
    node_style = oversized_message('{"result":{"content"', '"}]},"jsonrpc":"2.0","id":"r-1"}', 9, 1)
    assert python_style.message.id == 12
    assert python_style.message.error.message == (
        "the result is too large (999 bytes; the limit is 100)"
    )
    assert node_style.message.id == "r-1"
    nested_id_only = oversized_message('{"result":{"id":3', '"id":4}}', 9, 1)
    assert nested_id_only is None
    assert json.loads(python_style.message.model_dump_json())["id"] == 12
