"""The clients' world: the MCP endpoint, its meta-tools and the downstream pool.

This module is the gateway's public face: the names other apps (the admins' world, the
site, the benchmarks) may use, and the only import of the gateway they make
(tests/gateway/test_arrows.py holds it). Inside, one folder per room (docs/architecture.md):
`front` (the /mcp endpoint), `metatools` (open_toolbox, use_tool, search_tools),
`downstream` (the pool, its connections and the stdio sandbox), `observe` (metrics,
spans, logs, the call log), `snapshots` and `database` (what the gateway reads from the
admins' world and writes to it), `store` (the shared store), `for_admins` (what the admin
asks the gateway: a server's check, what a key sees, what a model would find), `search`
(a tenant's tools found by a query: `search_tools`' index); beside them `options` (every
setting the gateway reads) and `assembly` (its parts, built from them).

Every name is imported when first used (a module `__getattr__`): the settings and the
admin import this module, and a manage.py command that connects nothing must load neither
the SDK nor the gateway's Django models before the app registry is ready.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # typed for readers and mypy: what the admin's questions are answered by
    from mcp_gateway.for_admins.endpoint_names import endpoint_left_out
    from mcp_gateway.for_admins.key_view import KeySees, estimated_tokens, key_sees
    from mcp_gateway.for_admins.server_check import check_servers
    from mcp_gateway.for_admins.tool_search import ToolSearch, find_tools
    from mcp_gateway.front.endpoints import tenant_endpoint, toolbox_endpoint

__version__ = version("workbench")  # one home: pyproject.toml

_SANDBOX = "mcp_gateway.downstream.sandbox"
# Public name: (module, name there).
_PUBLIC: dict[str, tuple[str, str]] = {
    # Serving /mcp (workbench_site)
    "Gateway": ("mcp_gateway.front.http", "Gateway"),
    "is_gateway_path": ("mcp_gateway.front.endpoints", "is_gateway_path"),
    "tenant_endpoint": ("mcp_gateway.front.endpoints", "tenant_endpoint"),
    "toolbox_endpoint": ("mcp_gateway.front.endpoints", "toolbox_endpoint"),
    "GatewayOptions": ("mcp_gateway.options", "GatewayOptions"),
    "configure_process": ("mcp_gateway.assembly", "configure_process"),
    "METRICS_PATH": ("mcp_gateway.observe.metrics_endpoint", "METRICS_PATH"),
    "MetricsEndpoint": ("mcp_gateway.observe.metrics_endpoint", "MetricsEndpoint"),
    "env_file_names": ("mcp_gateway.downstream.envrefs", "env_file_names"),
    "embedded_store": ("mcp_gateway.store.backends", "embedded_store"),
    "shared_cache": ("mcp_gateway.store.backends", "shared_cache"),
    "EmbeddedStore": ("mcp_gateway.store.shared", "EmbeddedStore"),
    "REDIS_BACKEND": ("mcp_gateway.store.backends", "REDIS_BACKEND"),
    # The stdio sandbox: its settings, a spawn (bench)
    "SandboxPolicy": (f"{_SANDBOX}.policy", "SandboxPolicy"),
    "SandboxSpec": ("mcp_gateway.snapshots.sandbox", "SandboxSpec"),
    "CachePolicy": (f"{_SANDBOX}.cache", "CachePolicy"),
    "protect_cache_directory": (f"{_SANDBOX}.cache", "protect_directory"),
    "SANDBOX_HOME": (f"{_SANDBOX}.argv", "HOME"),
    "sandbox_launch": (f"{_SANDBOX}.argv", "launch"),
    "open_sandboxed": (f"{_SANDBOX}.start", "open_sandboxed"),
    "seccomp_program": (f"{_SANDBOX}.seccomp", "program"),
    "bounded_stdio_client": ("mcp_gateway.downstream.stdio", "bounded_stdio_client"),
    # A start the operator must act on, and the host's claims of uid ranges
    "StartRefused": (f"{_SANDBOX}.uid_claims", "StartRefused"),
    "retire_uid_claim": (f"{_SANDBOX}.uid_claims", "retire_claim"),
    "uid_claim_held": (f"{_SANDBOX}.uid_claims", "claim_held"),
    "read_uid_claim": (f"{_SANDBOX}.uid_claims", "read_claim"),
    "warming": ("mcp_gateway.downstream.warmup", "warming"),
    # Its log lines (settings.LOGGING)
    "JsonFormatter": ("mcp_gateway.observe.logs", "JsonFormatter"),
    "RepeatLimit": ("mcp_gateway.observe.logfilter", "RepeatLimit"),
    # What the admin asks the gateway
    "check_servers": ("mcp_gateway.for_admins.server_check", "check_servers"),
    "KeySees": ("mcp_gateway.for_admins.key_view", "KeySees"),
    "key_sees": ("mcp_gateway.for_admins.key_view", "key_sees"),
    "estimated_tokens": ("mcp_gateway.for_admins.key_view", "estimated_tokens"),
    "find_tools": ("mcp_gateway.for_admins.tool_search", "find_tools"),
    "endpoint_left_out": ("mcp_gateway.for_admins.endpoint_names", "endpoint_left_out"),
    "ToolSearch": ("mcp_gateway.for_admins.tool_search", "ToolSearch"),
    # The dashboard's live connections (this host's gateway processes)
    "live_downstream": ("mcp_gateway.observe.metrics", "live_downstream"),
    # Finding a tool by a query (bench/search_*.py; search_tools' index)
    "ToolIndex": ("mcp_gateway.search.index", "ToolIndex"),
    "Described": ("mcp_gateway.search.documents", "Described"),
    # A tenant's known tools as search_tools feeds and asks them, and the snapshot they
    # are kept for (bench/search_speed.py: the gateway's own path)
    "KnownTools": ("mcp_gateway.metatools.known_tools", "KnownTools"),
    "Listing": ("mcp_gateway.metatools.known_tools", "Listing"),
    "server_key": ("mcp_gateway.metatools.known_tools", "server_key"),
    "TenantConfig": ("mcp_gateway.snapshots.servers", "TenantConfig"),
    "ToolboxConfig": ("mcp_gateway.snapshots.servers", "ToolboxConfig"),
    "ServerConfig": ("mcp_gateway.snapshots.servers", "ServerConfig"),
}

__all__ = [  # the names of `_PUBLIC`, spelled out for readers and linters
    "METRICS_PATH",
    "REDIS_BACKEND",
    "SANDBOX_HOME",
    "CachePolicy",
    "Described",
    "EmbeddedStore",
    "Gateway",
    "GatewayOptions",
    "JsonFormatter",
    "KeySees",
    "KnownTools",
    "Listing",
    "MetricsEndpoint",
    "RepeatLimit",
    "SandboxPolicy",
    "SandboxSpec",
    "ServerConfig",
    "StartRefused",
    "TenantConfig",
    "ToolIndex",
    "ToolSearch",
    "ToolboxConfig",
    "__version__",
    "bounded_stdio_client",
    "check_servers",
    "configure_process",
    "embedded_store",
    "endpoint_left_out",
    "env_file_names",
    "estimated_tokens",
    "find_tools",
    "is_gateway_path",
    "key_sees",
    "live_downstream",
    "open_sandboxed",
    "protect_cache_directory",
    "read_uid_claim",
    "retire_uid_claim",
    "sandbox_launch",
    "seccomp_program",
    "server_key",
    "shared_cache",
    "tenant_endpoint",
    "toolbox_endpoint",
    "uid_claim_held",
    "warming",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'mcp_gateway' has no attribute {name!r}") from None
    value = getattr(import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
