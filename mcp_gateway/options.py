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
    tenant_rate: float = 0.0  # use_tool calls per second; 0: no limit
    tenant_burst: int = 0
    key_rate: float = 0.0
    key_burst: int = 0
    cache: dict[str, Any] = field(default_factory=dict)  # Django's CACHES["default"]
