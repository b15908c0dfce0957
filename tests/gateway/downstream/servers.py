"""Downstream servers as the gateway's snapshot names them, for the units of this room:
the fixture server over stdio (sandboxed as the settings say)."""

from __future__ import annotations

import sys
from dataclasses import replace

from mcp_gateway.snapshots.servers import ServerConfig, ServerRef, fingerprint
from tests.harness.paths import FIXTURE_SERVER


def fixture_server(name: str = "fixture", *args: str, server_id: int = 0) -> ServerConfig:
    server = ServerConfig(
        name, "stdio", command=sys.executable, args=(FIXTURE_SERVER, *args), server_id=server_id
    )
    return replace(server, fingerprint=fingerprint(server))


def ref(server: ServerConfig) -> ServerRef:
    return ServerRef("acme", "dev", server.name)
