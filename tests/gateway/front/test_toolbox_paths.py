"""Which paths are the toolbox endpoint's (`front.toolbox_server.toolbox_path`), and which
credential may open them (`may_open`)."""

from __future__ import annotations

import pytest
from mcp_types import INVALID_PARAMS

from mcp_gateway.front.toolbox_server import (
    ToolboxPath,
    may_open,
    resource_not_found_code,
    toolbox_path,
)
from mcp_gateway.snapshots.callers import Caller, KeyRecord
from mcp_gateway.snapshots.servers import TenantConfig, ToolboxConfig


@pytest.mark.parametrize(
    ("path", "found"),
    [
        ("/mcp/t/acme/toolboxes/dev", ToolboxPath("acme", "dev")),
        ("/mcp/t/acme/toolboxes/dev/", ToolboxPath("acme", "dev")),
        ("/mcp/t/acme/toolboxes/a.b-c_d", ToolboxPath("acme", "a.b-c_d")),
        ("/mcp/t/acme/toolboxes/", ToolboxPath("acme", "")),
        ("/mcp/t/acme/toolboxes/dev/more", ToolboxPath("acme", "")),
        ("/mcp/t/acme", None),
        ("/mcp/t/acme/toolboxes", None),
        ("/mcp/t//toolboxes/dev", None),
        ("/mcp", None),
    ],
)
def test_toolbox_paths(path, found):
    assert toolbox_path(path) == found


def caller(toolboxes: frozenset[str] | None) -> Caller:
    tenant = TenantConfig(1, "acme", True, 1, (ToolboxConfig("dev", "", ()),))
    key = KeyRecord(1, "p", "h", 1, False, None, toolboxes, 1)
    return Caller(key, tenant)


def test_only_a_toolbox_of_its_own_tenant_that_the_key_may_use_opens():
    anyone = caller(None)
    assert may_open(anyone, ToolboxPath("acme", "dev"))
    assert not may_open(anyone, ToolboxPath("acme", "ops"))  # no such toolbox
    assert not may_open(anyone, ToolboxPath("bravo", "dev"))  # another tenant's path
    assert not may_open(caller(frozenset({"ops"})), ToolboxPath("acme", "dev"))
    assert may_open(caller(frozenset({"dev"})), ToolboxPath("acme", "dev"))


def test_a_toolbox_its_admin_does_not_offer_alone_opens_for_no_key():
    tenant = TenantConfig(1, "acme", True, 1, (ToolboxConfig("dev", "", (), False),))
    for toolboxes in (None, frozenset({"dev"})):
        key = KeyRecord(1, "p", "h", 1, False, None, toolboxes, 1)
        assert not may_open(Caller(key, tenant), ToolboxPath("acme", "dev"))


def test_the_resource_not_found_code_follows_the_protocol_version():
    """-32002 until 2026-07-28 retired it (`mcp_types.version.MODERN_PROTOCOL_VERSIONS`
    names the versions that did: this fails by name if the SDK moves it)."""
    assert resource_not_found_code("2025-11-25") == -32002
    assert resource_not_found_code("2025-06-18") == -32002
    assert resource_not_found_code("2026-07-28") == INVALID_PARAMS
