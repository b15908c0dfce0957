"""Meta-tool argument validation: the spec's texts, structural problems first."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_gateway.metatools.errors import ErrorCode, GatewayError
from mcp_gateway.metatools.schemas import parse_open_args, parse_search_args, parse_use_args


def message(parse, arguments) -> str:
    with pytest.raises(GatewayError) as error:
        parse(arguments)
    assert error.value.code is ErrorCode.INVALID_PARAMETERS
    return error.value.message


def test_old_style_name_is_unrecognized_before_missing():
    assert message(parse_open_args, {"toolbox_name": "dev"}) == (
        "Invalid parameters: Unrecognized key: 'toolbox_name'"
    )


def test_structure_is_checked_before_empty_names():
    arguments = {"tool": {"toolbox": "", "server": "", "name": ""}, "arguments": 3}
    assert message(parse_use_args, arguments) == (
        "Invalid tool invocation parameters: arguments must be an object"
    )


def test_empty_names_in_order_toolbox_server_name():
    assert message(parse_use_args, {"tool": {"toolbox": "a", "server": "", "name": ""}}) == (
        "server: Server name cannot be empty"
    )


def test_arguments_default_to_an_empty_object_and_null_is_not_one():
    assert parse_use_args({"tool": {"toolbox": "a", "server": "b", "name": "c"}}).arguments == {}
    arguments = {"tool": {"toolbox": "a", "server": "b", "name": "c"}, "arguments": None}
    assert message(parse_use_args, arguments) == (
        "Invalid tool invocation parameters: arguments must be an object"
    )


def test_strings_are_not_coerced():
    assert message(parse_open_args, {"toolbox": b"dev"}) == (
        "Invalid parameters: toolbox must be a string"
    )
    assert message(parse_use_args, {"tool": {"toolbox": 1, "server": "b", "name": "c"}}) == (
        "Invalid tool invocation parameters: tool.toolbox must be a string"
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=16), json_values, max_size=5))
def test_any_open_arguments_give_a_result_or_a_clear_error(arguments):
    try:
        args = parse_open_args(arguments)
    except GatewayError as error:
        assert error.message.startswith("Invalid parameters: ")
    else:
        assert args.toolbox.strip()


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["tool", "arguments", "extra", "tool_name"]), json_values, max_size=3
    )
)
def test_any_use_arguments_give_a_result_or_a_clear_error(arguments):
    try:
        args = parse_use_args(arguments)
    except GatewayError as error:
        assert error.message.startswith("Invalid tool invocation parameters: ") or (
            error.message.endswith("cannot be empty")
        )
    else:
        assert all(getattr(args.tool, field).strip() for field in ("toolbox", "server", "name"))


LIMIT = "Invalid parameters: limit must be an integer from 1 to 50"


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        ({"query": "x", "limit": 0, "extra_field": 1}, "Unrecognized key: 'extra_field'"),
        ({"query": "", "limit": 0}, LIMIT.removeprefix("Invalid parameters: ")),
        ({"limit": 5}, "query is required"),
        ({"query": " ", "toolbox": ""}, "query cannot be empty"),
        ({"query": "x", "toolbox": ""}, "toolbox cannot be empty"),
        ({"query": "x", "limit": 1.0}, LIMIT.removeprefix("Invalid parameters: ")),
        ({"query": "x", "limit": False}, LIMIT.removeprefix("Invalid parameters: ")),
    ],
)
def test_search_arguments_in_order_unknown_key_limit_query_toolbox(arguments, text):
    assert message(parse_search_args, arguments) == f"Invalid parameters: {text}"


def test_search_limit_bounds_and_default():
    assert parse_search_args({"query": "x"}).limit == 10
    assert [parse_search_args({"query": "x", "limit": n}).limit for n in (1, 50)] == [1, 50]
    assert parse_search_args({"query": "x"}).toolbox is None
