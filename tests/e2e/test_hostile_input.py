"""Bad input gets a clear error and loses nothing: generated meta-tool arguments, and
malformed HTTP / JSON-RPC requests against a live gateway."""

from __future__ import annotations

import functools
import json
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_gateway.downstream.pool import Pool
from mcp_gateway.metatools.meta_tools import MetaTools
from mcp_gateway.metatools.open_state import OpenToolboxes
from mcp_gateway.metatools.parts import MetaToolParts
from mcp_gateway.metatools.use_tool import ToolCall
from mcp_gateway.snapshots.callers import Caller, KeyRecord
from mcp_gateway.snapshots.servers import TenantConfig, ToolboxConfig
from mcp_gateway.store.shared import SharedStore, store_for
from tests.harness.results import INITIALIZE_PARAMS

KNOWN_PREFIXES = (
    "Invalid parameters: ",
    "Invalid tool invocation parameters: ",
    "toolbox: Toolbox name cannot be empty",
    "server: Server name cannot be empty",
    "name: Tool name cannot be empty",
    "Error: Toolbox '",
    "Error executing tool: Toolbox '",
)

# JSON values of every kind: unicode, huge strings, deep nesting, odd numbers.
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.text(min_size=1, max_size=4).map(lambda chunk: chunk * 5_000)  # huge strings
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=30,
)
deep = st.integers(1, 200).map(lambda depth: json.loads("[" * depth + "]" * depth))
names = st.one_of(st.text(max_size=30), st.sampled_from(["", " ", "dev", "\u0000", "..", "../x"]))
KEYS = ["toolbox", "tool", "arguments", "toolbox_name", "tool_name", "source_server", "extra"]
keys = st.sampled_from([*KEYS, "query", "limit"]) | st.text(max_size=12)
tool_refs = st.fixed_dictionaries(
    {}, optional={"toolbox": names, "server": names, "name": names, "tool": json_values}
)
arguments = st.one_of(
    st.dictionaries(keys, json_values | deep | names, max_size=4),
    st.fixed_dictionaries({"tool": tool_refs}, optional={"arguments": json_values}),
    st.fixed_dictionaries({"toolbox": names}),
)


def caller() -> Caller:
    key = KeyRecord(
        key_id=1,
        prefix="fuzzfuzz",
        key_hash="",
        tenant_id=1,
        revoked=False,
        expires_at=None,
        toolboxes=None,
        version=0,
    )
    tenant = TenantConfig(1, "fuzz", True, 0, (ToolboxConfig("empty", "nothing", ()),))
    return Caller(key, tenant)


@functools.cache
def one_store() -> SharedStore:
    """One store for every example: opening the embedded (on-disk) store costs more than a
    call, and thousands of examples would spend minutes opening it."""
    return store_for({})


def check(result: types.CallToolResult) -> None:
    assert result.is_error
    text = result.content[0].text
    assert text.startswith(KNOWN_PREFIXES), text
    assert result.structured_content["error"]["message"] == text


@pytest.mark.once_pg  # in-process, no database: the same on every database
@pytest.mark.parametrize("tool", ["open_toolbox", "use_tool", "search_tools"])
@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(arguments=arguments)
def test_generated_arguments_get_clear_errors(db, tool, arguments):
    open_toolboxes = OpenToolboxes(60, one_store())
    pool = Pool(
        connect_timeout=1,
        idle_seconds=60,
        max_result_bytes=1024,
        max_connections=1,
        tenant_max_connections=1,
    )
    metatools = MetaTools(MetaToolParts(pool, open_toolboxes))
    if tool == "open_toolbox" and arguments == {"toolbox": "empty"}:
        return  # the one valid call: an empty toolbox opens
    if tool == "open_toolbox":
        outcome = anyio.run(metatools.open_toolbox, caller(), arguments, backend="asyncio")
    elif tool == "search_tools":
        outcome = anyio.run(metatools.search_tools, caller(), arguments, backend="asyncio")
        if not outcome.result.is_error:  # a valid search of a tenant with no tools
            assert outcome.result.structured_content == {"query": arguments["query"], "tools": []}
            return
    else:
        call = ToolCall.of(caller(), arguments)
        outcome = anyio.run(metatools.use_tool, call, backend="asyncio")
    result = outcome.result
    check(result)


# Malformed HTTP and JSON-RPC, against the real server.

ACCEPTS = ["application/json, text/event-stream", "application/json", "text/html", ""]
CONTENT_TYPES = ["application/json", "text/plain", "", "application/x-www-form-urlencoded"]
VERSIONS = [None, "2025-11-25", "2026-07-28", "1999-01-01", "nonsense"]


def jsonrpc_like() -> st.SearchStrategy[Any]:
    request = st.fixed_dictionaries(
        {},
        optional={
            "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
            "id": st.one_of(st.integers(), st.text(max_size=5), st.none(), st.lists(st.integers())),
            "method": st.sampled_from(
                ["initialize", "tools/call", "tools/list", "server/discover", "nope", ""]
            ),
            "params": json_values,
        },
    )
    return st.one_of(request, st.lists(request, max_size=3), json_values)


bodies = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(str.encode),
    jsonrpc_like().map(lambda value: json.dumps(value).encode()),
)


@pytest.mark.once_pg  # HTTP and JSON-RPC parsing: the same on every database
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    body=bodies,
    method=st.sampled_from(["POST", "POST", "POST", "GET", "PUT", "PATCH", "DELETE"]),
    accept=st.sampled_from(ACCEPTS),
    content_type=st.sampled_from(CONTENT_TYPES),
    version=st.sampled_from(VERSIONS),
    session_id=st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9-]{0,40}", fullmatch=True)),
)
def test_malformed_requests_never_get_a_5xx_or_hang(
    live_gateway, make_setup, body, method, accept, content_type, version, session_id
):
    setup, http = fuzz_setup(make_setup)
    headers = {"Authorization": f"Bearer {setup.key}", "Accept": accept}
    if content_type:
        headers["Content-Type"] = content_type
    if version:
        headers["MCP-Protocol-Version"] = version
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
    response = http.request(method, live_gateway.url, content=body, headers=headers)
    assert response.status_code < 500, (response.status_code, response.text[:500])
    assert response.status_code != 401, "the fuzzer's key was refused: nothing got past auth"
    # Past the SDK's status-only refusals (405 wrong method, 406 wrong Accept), an error
    # has a body that says what is wrong (a JSON-RPC error or the SDK's text).
    if response.status_code >= 400 and response.status_code not in (405, 406):
        assert response.text.strip(), (response.status_code, dict(response.headers))


_setups: dict[int, Any] = {}


def fuzz_setup(make_setup) -> tuple[Any, httpx2.Client]:
    """One tenant and one HTTP client for all examples of a run (hypothesis calls the test
    body many times within one use of the fixtures)."""
    key = id(make_setup)
    if key not in _setups:
        for _, old_client in _setups.values():
            old_client.close()
        _setups.clear()
        setup = make_setup("fuzz")
        setup.toolbox("dev")
        _setups[key] = (setup, httpx2.Client(timeout=10))
    return _setups[key]


def test_oversized_body_is_refused(live_gateway, make_setup):
    setup = make_setup()
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "pad": "'
        + b"x" * (5 * 1024 * 1024)
        + b'"}'
    )
    response = httpx2.post(
        live_gateway.url,
        content=body,
        headers={
            "Authorization": f"Bearer {setup.key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        timeout=30,
    )
    assert response.status_code == 413


def test_batch_arrays_and_bad_json_get_json_rpc_errors(live_gateway, make_setup):
    setup = make_setup()
    headers = {
        "Authorization": f"Bearer {setup.key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS}]
    for content in (json.dumps(batch).encode(), b"{not json", b""):
        response = httpx2.post(live_gateway.url, content=content, headers=headers, timeout=10)
        assert 400 <= response.status_code < 500, response.text
        assert "error" in response.text.lower()
