"""The world of the toolbox endpoint's tests with published servers: tenant `acme` with
toolbox `dev` (npm's server-everything, then the fixture server) and toolbox `plain` (the
fixture server only: no resources, no prompts), and tenant `bravo` with its own `dev`
(server-everything too)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from toolboxes.models import Server, Toolbox

NODE_BIN = Path(__file__).resolve().parents[1] / "node_modules" / ".bin"
EVERYTHING = NODE_BIN / "mcp-server-everything"
needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not EVERYTHING.exists(),
    reason="Node or the npm test servers are missing (make test installs them when Node is "
    "present: npm ci --prefix tests)",
)
APPS = NODE_BIN / "mcp-server-basic-vanillajs"  # an MCP Apps server: a tool with a ui:// page
needs_apps = pytest.mark.skipif(
    shutil.which("node") is None or not APPS.exists(),
    reason="Node or npm's MCP Apps example server is missing (npm ci --prefix tests)",
)


def add_everything(toolbox: Toolbox, position: int = 0) -> Server:
    server = Server(
        toolbox=toolbox,
        name="everything",
        command=str(EVERYTHING),
        args=["stdio"],
        position=position,
    )
    server.full_clean()
    server.save()
    return server


def add_apps(toolbox: Toolbox, position: int = 0) -> Server:
    server = Server(
        toolbox=toolbox, name="apps", command=str(APPS), args=["--stdio"], position=position
    )
    server.full_clean()
    server.save()
    return server


def make_world() -> tuple[TenantSetup, TenantSetup]:
    acme = make_tenant_setup("acme")
    dev = acme.toolbox("dev", "Development tools")
    add_everything(dev)
    acme.fixture_server(dev, "files", position=1)
    plain = acme.toolbox("plain", "Plain tools")
    acme.fixture_server(plain, "files")
    bravo = make_tenant_setup("bravo")
    add_everything(bravo.toolbox("dev", "Bravo's tools"))
    return acme, bravo


def endpoint(gateway: LiveGateway, slug: str, toolbox: str) -> LiveGateway:
    return replace(gateway, url=gateway.url.rstrip("/") + f"/t/{slug}/toolboxes/{toolbox}")
