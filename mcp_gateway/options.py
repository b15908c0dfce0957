"""The gateway's options for one process, from Django's settings.

Each field is the setting `WORKBENCH_<FIELD>` (settings.py reads it from the environment,
with the default given here, or by the sandbox's policies for theirs), except
`allowed_hosts` (ALLOWED_HOSTS) and `cache` (CACHES["default"]). `from_settings` is the one
reader of them: the assembly reads them once at start; what a connection reads at each
connect (`${VAR}` references, discovery bounds, the sandbox's egress) it reads through
`current_options()`, so that a change of settings applies to the next connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from mcp_gateway.downstream.sandbox.cache import CachePolicy
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.snapshots.sandbox import Limits

NOT_PREFIXED = ("allowed_hosts", "cache")
_SANDBOX = SandboxPolicy()  # the sandbox's defaults have their home in its policy
_CACHE = CachePolicy()


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
    # What a connection reads (at each connect): which ${VAR} names servers may reference
    # (never the gateway's own settings nor its env file's names), and discovery's bounds.
    env_references: list[str] = field(default_factory=list)
    env_file_names: frozenset[str] = frozenset()
    max_tools_per_server: int = 1000
    max_tool_pages: int = 100
    max_tool_bytes: int = 4 * 1024 * 1024
    # The stdio sandbox (`sandbox_policy()`); 0 for a limit: none.
    sandbox: str = _SANDBOX.mode
    sandbox_memory_mb: int = _SANDBOX.limits.memory_mb or 0
    sandbox_processes: int = _SANDBOX.limits.processes or 0
    sandbox_cpu_seconds: int = _SANDBOX.limits.cpu_seconds or 0
    sandbox_open_files: int = _SANDBOX.limits.open_files or 0
    sandbox_uid_base: int = _SANDBOX.uid_base
    sandbox_tmp_mb: int = _SANDBOX.tmp_mb
    sandbox_protected_paths: list[str] = field(default_factory=list)
    sandbox_egress_allow: list[str] = field(default_factory=list)
    # Each tenant's package cache (`cache_policy()`): where, and its bound (MiB; 0: none).
    sandbox_cache_dir: str = _CACHE.directory
    sandbox_cache_mb: int = _CACHE.size_mb
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

    def sandbox_policy(self) -> SandboxPolicy:
        """The gateway-wide sandbox rules."""
        return SandboxPolicy(
            mode=self.sandbox,
            limits=Limits(
                self.sandbox_memory_mb or None,
                self.sandbox_processes or None,
                self.sandbox_cpu_seconds or None,
                self.sandbox_open_files or None,
            ),
            uid_base=self.sandbox_uid_base,
            tmp_mb=self.sandbox_tmp_mb,
            protected=tuple(self.sandbox_protected_paths),
            cache=self.cache_policy(),
        )

    def cache_policy(self) -> CachePolicy:
        return CachePolicy(directory=self.sandbox_cache_dir, size_mb=self.sandbox_cache_mb)


def current_options() -> GatewayOptions:
    """The settings' options as they are now: what a connection reads at each connect (a
    change of settings, or a test's, applies to the next connection)."""
    from django.conf import settings

    return GatewayOptions.from_settings(settings)
