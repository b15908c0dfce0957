"""The gateway's options for one process, from Django's settings.

Each field is the setting `WORKBENCH_<FIELD>` (settings.py reads it from the environment,
with the default given here), except `allowed_hosts` (ALLOWED_HOSTS) and `cache`
(CACHES["default"]). Settings read at each connect (`${VAR}` references, egress, discovery
bounds, the sandbox's) are not options: a change applies to the next connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

NOT_PREFIXED = ("allowed_hosts", "cache")


@dataclass(frozen=True)
class GatewayOptions:
    allowed_hosts: list[str] = field(default_factory=lambda: ["localhost", "127.0.0.1"])
    session_idle_seconds: int = 3600
    connect_timeout_seconds: float = 30.0
    idle_connection_seconds: float = 600.0
    max_request_bytes: int = 4 * 1024 * 1024
    max_result_bytes: int = 10 * 1024 * 1024
    max_connections: int = 500
    tenant_max_connections: int = 50
    tenant_rate_limit: float = 100.0  # use_tool calls per second; 0: no limit
    tenant_rate_burst: int = 200
    key_rate_limit: float = 50.0
    key_rate_burst: int = 100
    # open_toolbox, in buckets of its own (opening is what starts processes).
    open_tenant_rate_limit: float = 10.0
    open_tenant_rate_burst: int = 40
    open_key_rate_limit: float = 5.0
    open_key_rate_burst: int = 20
    key_max_in_flight: int = 32  # requests of one key served at once per process; 0: none
    # Where this host's installations claim their sandbox uid ranges (sandbox.uid_claims).
    sandbox_uid_claims_dir: str = "/var/lib/workbench/uid-claims"
    call_log: bool = True  # off: nothing is written to the call log
    call_log_queue: int = 10000  # entries waiting for the writer; past it, dropped
    call_log_batch: int = 500
    # Behind a load balancer: this replica's name there (stable across restarts), so that
    # it starts again the servers it ran, for at most warm_up_seconds (downstream.warmup).
    replica: str = ""
    warm_up_seconds: float = 30.0
    cache: dict[str, Any] = field(default_factory=dict)  # Django's CACHES["default"]

    @classmethod
    def from_settings(cls, settings: Any) -> GatewayOptions:
        values = {
            option.name: getattr(settings, f"WORKBENCH_{option.name.upper()}")
            for option in fields(cls)
            if option.name not in NOT_PREFIXED
        }
        return cls(allowed_hosts=settings.ALLOWED_HOSTS, cache=settings.CACHES["default"], **values)
