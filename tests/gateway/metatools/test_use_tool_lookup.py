"""A use_tool names its tool once: what the client named (strings only) and what the
configuration knows of it, looked up once, carried to its outcome."""

from __future__ import annotations

from mcp_gateway.metatools.use_tool import ToolCall
from mcp_gateway.observe.outcome import Named
from mcp_gateway.snapshots.callers import Caller, KeyRecord
from mcp_gateway.snapshots.servers import ServerConfig, TenantConfig, ToolboxConfig

SERVER = ServerConfig("files", "stdio", command="true")
TOOLBOX = ToolboxConfig("dev", "dev tools", (SERVER,))
CALLER = Caller(
    KeyRecord(1, "k", "", 1, False, None, None, 1), TenantConfig(1, "acme", True, 1, (TOOLBOX,))
)


def test_a_known_tool_is_found_once():
    call = ToolCall.of(CALLER, {"tool": {"toolbox": "dev", "server": "files", "name": "read"}})
    assert call.named == Named("dev", "files", "read")
    assert call.toolbox is TOOLBOX and call.server is SERVER
    outcome = call.outcome(None)
    assert (outcome.result, outcome.toolbox, outcome.server) == (None, TOOLBOX, SERVER)


def test_what_is_not_a_string_is_not_named():
    call = ToolCall.of(CALLER, {"tool": {"toolbox": "dev", "server": 5, "name": ["x"]}})
    assert call.named == Named("dev", "", "")
    assert (call.toolbox, call.server) == (TOOLBOX, None)
    assert ToolCall.of(CALLER, None).named == Named()
    assert ToolCall.of(CALLER, {"tool": {"toolbox": "other"}}).toolbox is None
