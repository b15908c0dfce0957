"""Pins of the SDK internals `mcp_gateway/downstream/envelope.py` is built on: the client
session's per-request envelope (`ClientSession._stamp`, the one seam where a request's
`_meta` gets the client's capabilities) and the 2026-07-28 connect policy
(`mcp.client._probe.negotiate_auto`). An SDK upgrade that moves or reshapes one fails
here, by name, instead of as servers told the wrong capabilities."""

from __future__ import annotations

import inspect

from mcp.client import _probe
from mcp.client import session as sdk_session
from mcp.client.session import ClientSession
from mcp_types import CLIENT_CAPABILITIES_META_KEY


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
