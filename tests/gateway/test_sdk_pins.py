"""Pins of the SDK internals `mcp_gateway/stdio.py` is built from (private helpers of
`mcp.client.stdio`): an SDK upgrade that moves or reshapes one fails here, by name,
instead of somewhere deep in a downstream connection."""

from __future__ import annotations

import inspect

import pytest
from mcp.client import stdio as sdk_stdio

# name -> (parameters in order, each with its kind and whether it has a default; is async)
PINNED = {
    "_create_platform_compatible_process": (
        [
            ("command", "POSITIONAL_OR_KEYWORD", False),
            ("args", "POSITIONAL_OR_KEYWORD", False),
            ("env", "POSITIONAL_OR_KEYWORD", True),
            ("errlog", "POSITIONAL_OR_KEYWORD", True),
            ("cwd", "POSITIONAL_OR_KEYWORD", True),
        ],
        True,
    ),
    "_parse_line": ([("line", "POSITIONAL_OR_KEYWORD", False)], False),
    "_drain_stdout": ([("process", "POSITIONAL_OR_KEYWORD", False)], True),
    "_stop_server_process": ([("process", "POSITIONAL_OR_KEYWORD", False)], True),
    "_aclose_all": ([("streams", "VAR_POSITIONAL", False)], True),
    "get_default_environment": ([], False),
}


def shape(function: object) -> tuple[list[tuple[str, str, bool]], bool]:
    parameters = [
        (p.name, p.kind.name, p.default is not inspect.Parameter.empty)
        for p in inspect.signature(function).parameters.values()
    ]
    return parameters, inspect.iscoroutinefunction(function)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_sdk_stdio_helper_is_unchanged(name):
    helper = getattr(sdk_stdio, name, None)
    assert helper is not None, (
        f"mcp.client.stdio.{name} is gone: mcp_gateway/stdio.py uses it (see its docstring)"
    )
    assert shape(helper) == PINNED[name], (
        f"mcp.client.stdio.{name} changed its signature to {inspect.signature(helper)}: "
        "check mcp_gateway/stdio.py's use of it and its list of differences from the SDK"
    )


def test_the_parsed_line_is_still_a_session_message():
    message = sdk_stdio._parse_line('{"jsonrpc": "2.0", "id": 1, "result": {}}')
    assert type(message).__name__ == "SessionMessage", (
        "mcp.client.stdio._parse_line no longer returns a SessionMessage for a valid line"
    )
    assert isinstance(sdk_stdio._parse_line("not json"), Exception), (
        "mcp.client.stdio._parse_line no longer returns a parse error as a value"
    )


def test_the_default_environment_is_still_a_small_allowlist():
    assert set(sdk_stdio.get_default_environment()) <= {
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
    }, "mcp.client.stdio.get_default_environment passes more than its POSIX allowlist"
