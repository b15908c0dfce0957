"""The gateway's knobs, in one place (filled from Django settings by workbench_site)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GatewayOptions:
    allowed_hosts: list[str] = field(default_factory=lambda: ["localhost", "127.0.0.1"])
    session_idle_seconds: int = 3600
    connect_timeout: float = 30.0
    idle_connection_seconds: float = 600.0
    max_request_bytes: int = 4 * 1024 * 1024
    max_result_bytes: int = 10 * 1024 * 1024
    max_connections: int = 500
    tenant_max_connections: int = 50
    tenant_rate: float = 100.0  # use_tool calls per second; 0: no limit
    tenant_burst: int = 200
    key_rate: float = 50.0
    key_burst: int = 100
    # open_toolbox, in buckets of its own (opening is what starts processes).
    open_tenant_rate: float = 10.0
    open_tenant_burst: int = 40
    open_key_rate: float = 5.0
    open_key_burst: int = 20
    key_max_in_flight: int = 32  # requests of one key served at once per process; 0: none
    # Tenant isolation (read at each connect from Django's settings, so these are only
    # the defaults): ${VAR} names allowed, remote addresses allowed beyond public ones,
    # and the bounds of one server's tools/list.
    env_references: tuple[str, ...] = ()
    egress_allow: tuple[str, ...] = ()
    max_tools_per_server: int = 1000
    max_tool_pages: int = 100
    max_tool_bytes: int = 4 * 1024 * 1024
    cache: dict[str, Any] = field(default_factory=dict)  # Django's CACHES["default"]
    # Where this host's installations claim their sandbox uid ranges (mcp_gateway.uid_claims).
    uid_claims_dir: str = "/var/lib/workbench/uid-claims"
