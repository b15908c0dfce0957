"""The gateway's options for one process, from Django's settings.

Each field is the setting `WORKBENCH_<FIELD>` (settings.py reads it from the environment,
with the default given here: the sandbox's policies take theirs from here too), except
`allowed_hosts` (ALLOWED_HOSTS) and `cache` (CACHES["default"]). `from_settings` is the one
reader of them: the assembly reads them once at start; what a connection reads at each
connect (`${VAR}` references, discovery bounds, the sandbox's egress) it reads through
`current_options()`, so that a change of settings applies to the next connection.
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
    # Calls held for a 2026-07-28 client's answer to a 2025-11-25 server's question, at once
    # per process (`metatools.held_calls` says why 256); past it the question is refused.
    held_calls: int = 256
    # What a connection reads (at each connect): which ${VAR} names servers may reference
    # (never the gateway's own settings nor its env file's names), and discovery's bounds.
    env_references: list[str] = field(default_factory=list)
    env_file_names: frozenset[str] = frozenset()
    max_tools_per_server: int = 1000
    max_tool_pages: int = 100
    max_tool_bytes: int = 4 * 1024 * 1024
    # The stdio sandbox (`SandboxPolicy.of`): bwrap or none, every stdio server's default
    # limits (0: none), the first of the per-tenant uids, the tmpfs /tmp and HOME (MiB).
    sandbox: str = "bwrap"
    sandbox_memory_mb: int = 1024
    sandbox_processes: int = 512
    sandbox_cpu_seconds: int = 3600
    sandbox_open_files: int = 1024
    sandbox_uid_base: int = 200_000
    sandbox_tmp_mb: int = 64
    sandbox_protected_paths: list[str] = field(default_factory=list)
    sandbox_egress_allow: list[str] = field(default_factory=list)
    # Each tenant's package cache (`CachePolicy.of`): where, and its bound (MiB; 0: none).
    sandbox_cache_dir: str = "/var/lib/workbench/sandbox-cache"
    sandbox_cache_mb: int = 1024
    # Where this host's installations claim their sandbox uid ranges (sandbox.uid_claims).
    sandbox_uid_claims_dir: str = "/var/lib/workbench/uid-claims"
    call_log: bool = True  # off: nothing is written to the call log
    call_log_queue: int = 10000  # entries waiting for the writer; past it, dropped
    call_log_batch: int = 500
    # Behind a load balancer: this replica's name there (stable across restarts), so that
    # it starts again the servers it ran, for at most warm_up_seconds (downstream.warmup).
    replica: str = ""
    warm_up_seconds: float = 30.0
    # /metrics: a scraper's bearer token (empty: none) or its addresses; the workers'
    # multiprocess files (empty: this process's metrics only).
    metrics_token: str = ""
    metrics_allowed_ips: list[str] = field(default_factory=lambda: ["127.0.0.1", "::1"])
    metrics_dir: str = ""
    cache: dict[str, Any] = field(default_factory=dict)  # Django's CACHES["default"]

    @classmethod
    def from_settings(cls, settings: Any) -> GatewayOptions:
        values = {
            option.name: getattr(settings, f"WORKBENCH_{option.name.upper()}")
            for option in fields(cls)
            if option.name not in NOT_PREFIXED
        }
        return cls(allowed_hosts=settings.ALLOWED_HOSTS, cache=settings.CACHES["default"], **values)


def current_options() -> GatewayOptions:
    """The settings' options as they are now: what a connection reads at each connect (a
    change of settings, or a test's, applies to the next connection)."""
    from django.conf import settings

    return GatewayOptions.from_settings(settings)
