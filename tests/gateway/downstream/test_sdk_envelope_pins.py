"""Pins of the SDK internals `mcp_gateway/downstream/envelope.py` is built on: the client
session's per-request envelope (`ClientSession._stamp`, the one seam where a request's
`_meta` gets the client's capabilities) and the 2026-07-28 connect policy
(`mcp.client._probe.negotiate_auto`), and what a session declares at its `initialize`
(`ClientSession._build_capabilities`). An SDK upgrade that moves or reshapes one fails
here, by name, instead of as servers told the wrong capabilities."""

from __future__ import annotations

import inspect

import anyio
from mcp.client import _probe
from mcp.client import session as sdk_session
from mcp.client.session import ClientSession
from mcp_types import CLIENT_CAPABILITIES_META_KEY

from mcp_gateway.downstream.envelope import DeclaringSession


def test_negotiate_auto_takes_the_session_and_is_async() -> None:
    function = _probe.negotiate_auto
    names = [p.name for p in inspect.signature(function).parameters.values()]
    assert names == ["session"]
    assert inspect.iscoroutinefunction(function)


def test_the_session_stamps_every_request_through_its_stamp_attribute() -> None:
    init = inspect.getsource(ClientSession.__init__)
    assert "self._stamp" in init, "ClientSession no longer keeps its envelope in _stamp"
    sends = inspect.getsource(ClientSession)
    assert sends.count("self._stamp(data, opts)") >= 2, "requests and notifications"


def test_the_modern_stamp_writes_the_client_capabilities_key() -> None:
    source = inspect.getsource(sdk_session._make_modern_stamp)
    assert "CLIENT_CAPABILITIES_META_KEY" in source
    assert CLIENT_CAPABILITIES_META_KEY == "io.modelcontextprotocol/clientCapabilities"


def test_the_modern_stamp_takes_the_param_header_resolver_when_adopted() -> None:
    """`envelope.negotiate` gives a stdio session a resolver of no headers before it
    adopts 2026-07-28: the stamp must read the session's attribute then, and it must be
    the stamp's only use (a stdio request has no headers to carry `Mcp-Param`)."""
    adopt = inspect.getsource(ClientSession.adopt)
    assert "self._resolve_param_headers" in adopt
    source = inspect.getsource(ClientSession)
    assert source.count("self._resolve_param_headers") == 1, "a new use to check"
    names = list(inspect.signature(ClientSession._resolve_param_headers).parameters)
    assert names == ["self", "name", "arguments"]


def test_what_a_session_declares_is_built_by_build_capabilities() -> None:
    """`envelope.DeclaringSession` overrides `_build_capabilities`: the one place the SDK
    builds what `initialize` and `server/discover` declare."""
    names = list(inspect.signature(ClientSession._build_capabilities).parameters)
    assert names == ["self", "version"]
    assert "self._build_capabilities(" in inspect.getsource(ClientSession.initialize)
    assert "self._build_capabilities(" in inspect.getsource(ClientSession.send_discover)
    assert "self._build_capabilities(" in inspect.getsource(ClientSession.adopt)
    building = inspect.getsource(ClientSession)
    assert building.count("_build_capabilities(") == 4, "a new caller to pin"


def test_a_declaring_session_declares_its_set_and_nothing_else() -> None:
    async def callback(*args: object) -> None:
        raise AssertionError("not called")

    declares = {"elicitation": {"form": {}}, "roots": {}}
    session = DeclaringSession(
        anyio.create_memory_object_stream(1)[1],
        anyio.create_memory_object_stream(1)[0],
        elicitation_callback=callback,
        sampling_callback=callback,
        list_roots_callback=callback,
        declares=declares,
    )
    built = session._build_capabilities("2025-11-25")
    assert built.model_dump(by_alias=True, mode="json", exclude_none=True) == declares
