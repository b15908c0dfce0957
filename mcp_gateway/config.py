"""The gateway's only door into `toolboxes/`: immutable snapshots of keys and configuration.

Snapshots live in this process and are reloaded when the tenant's version counter in the
shared cache moves (`toolboxes.versions`, bumped on every save in any process), so the hot
path reads one cache value and never the database. Secrets stay in this process's memory.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from asgiref.sync import sync_to_async
from django.core.cache import cache
from django.db import close_old_connections, connections

from mcp_gateway.pins import OFF, Pins
from mcp_gateway.sandbox import Limits, Mount, SandboxSpec
from mcp_gateway.sandbox_paths import tenant_roots
from mcp_gateway.store import SharedStore
from toolboxes import checks, versions
from toolboxes import pins as tool_pins
from toolboxes.catalog import Launch, launch_of, values_of
from toolboxes.installation import describe_database, installation_id
from toolboxes.models import ApiKey, Server, Tenant


@dataclass(frozen=True, slots=True)
class ServerConfig:
    name: str
    transport: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    tool_filters: tuple[str, ...] = ("*",)
    timeout: float = 60.0
    idle_timeout: float | None = None  # None: the gateway's own setting
    sandbox: SandboxSpec = field(default_factory=SandboxSpec)  # stdio: mounts, network, limits
    pins: Pins = field(default_factory=Pins)  # approved tool definitions (mcp_gateway.pins)
    # A catalog-made server's secret parameter values, wherever the entry put them (args,
    # URL): its connection redacts them with its env and header values.
    secrets: tuple[str, ...] = field(default=(), repr=False)
    server_id: int = field(default=0, compare=False)  # the row, for what the gateway records
    fingerprint: str = field(default="", compare=False)

    def allows(self, tool_name: str) -> bool:
        return "*" in self.tool_filters or tool_name in self.tool_filters

    @property
    def is_stdio(self) -> bool:
        return self.transport == "stdio"


@dataclass(frozen=True, slots=True)
class ToolboxConfig:
    name: str
    description: str
    servers: tuple[ServerConfig, ...]

    def server(self, name: str) -> ServerConfig | None:
        return next((server for server in self.servers if server.name == name), None)


@dataclass(frozen=True, slots=True)
class TenantConfig:
    tenant_id: int
    slug: str
    active: bool
    version: int
    toolboxes: tuple[ToolboxConfig, ...]
    max_connections: int | None = None  # None: the gateway's default

    def toolbox(self, name: str) -> ToolboxConfig | None:
        return next((toolbox for toolbox in self.toolboxes if toolbox.name == name), None)


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """What verifying a key needs; the key itself is never kept."""

    key_id: int
    prefix: str
    key_hash: str
    tenant_id: int
    revoked: bool
    expires_at: float | None
    toolboxes: frozenset[str] | None  # None: every toolbox of the tenant
    version: int

    def allows(self, toolbox: str) -> bool:
        return self.toolboxes is None or toolbox in self.toolboxes


def fingerprint(server: ServerConfig) -> str:
    """Identifies what a connection was made from; any edit of these fields changes it."""
    material = [
        server.transport,
        server.command,
        server.args,
        server.env,
        server.cwd,
        server.url,
        server.headers,
        server.sandbox.material(),
    ]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()[:16]


def _load_tenant(tenant_id: int, version: int) -> TenantConfig | None:
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return None
    toolboxes = []
    server_ids = Server.objects.filter(toolbox__tenant=tenant).values_list("pk", flat=True)
    pinned = tool_pins.snapshot(server_ids)
    toolboxes_with_servers = tenant.toolboxes.order_by("name").prefetch_related(
        "servers__catalog_entry__parameters"
    )
    for toolbox in toolboxes_with_servers:
        servers = []
        for server in sorted(toolbox.servers.all(), key=lambda s: (s.position, s.pk)):
            if server.enabled:
                servers.append(_server_config(tenant.pk, server, pinned))
        toolboxes.append(ToolboxConfig(toolbox.name, toolbox.description, tuple(servers)))
    return TenantConfig(
        tenant.pk,
        tenant.slug,
        tenant.is_active,
        version,
        tuple(toolboxes),
        tenant.max_connections,
    )


def _server_config(
    tenant_id: int, server: Server, pinned: dict[int, tool_pins.ServerPins]
) -> ServerConfig:
    launch = launch_of(server)  # a catalog-made server: its entry, values filled in
    config = ServerConfig(
        name=server.name,
        transport=launch.transport,
        command=launch.command,
        args=tuple(launch.args),
        env=tuple(sorted(launch.env.items())),
        cwd=launch.cwd,
        url=launch.url,
        headers=tuple(sorted(launch.headers.items())),
        tool_filters=tuple(server.tool_filters),
        timeout=float(server.timeout),
        idle_timeout=server.idle_timeout,
        pins=_pins(server, pinned),
        secrets=_secret_values(server),
        server_id=server.pk,
        sandbox=_sandbox_spec(tenant_id, launch, tenant_roots(server.toolbox.tenant.slug)),
    )
    return _with_fingerprint(config)


def _secret_values(server: Server) -> tuple[str, ...]:
    """The values of a catalog-made server's secret parameters (defaults included)."""
    if server.catalog_entry_id is None:
        return ()
    values = values_of(server)
    secret = [p.name for p in server.catalog_entry.parameters.all() if p.secret]
    return tuple(sorted({values[name] for name in secret if values.get(name)}))


def server_config(server: Server) -> ServerConfig:
    """One server as the gateway would connect it (an admin's check; enabled or not)."""
    return _server_config(server.toolbox.tenant_id, server, tool_pins.snapshot([server.pk]))


def _sandbox_spec(tenant_id: int, server: Launch, roots: tuple[str, ...]) -> SandboxSpec:
    mounts = tuple(Mount(item["path"], bool(item.get("writable"))) for item in server.mounts)
    limits = Limits(
        server.memory_limit_mb,
        server.process_limit,
        server.cpu_limit_seconds,
        server.open_files_limit,
    )
    allow = tuple(server.egress_allow)
    return SandboxSpec(tenant_id, mounts, server.network, limits, allow, roots)


def _pins(server: Server, pinned: dict[int, tool_pins.ServerPins]) -> Pins:
    state = pinned[server.pk]
    return Pins(server.pinning, MappingProxyType(state.approved), state.trusted_fingerprint)


def _record_offer(server_id: int, fingerprint: str, definitions: list[dict[str, Any]]) -> None:
    server = Server.objects.select_related("toolbox").filter(pk=server_id).first()
    if server is not None:
        tool_pins.record_offer(server, fingerprint, definitions)


def save_calls(entries: list[Any]) -> None:
    """Write a batch of call log entries (`mcp_gateway.calllog`), in the writer's thread.

    Imported when first used: the call log's app imports the gateway's redaction.
    """
    from calls.writer import save_batch

    save_batch(entries)


async def save_offer(server_id: int, fingerprint: str, definitions: list[dict[str, Any]]) -> None:
    """What a connected server offers, recorded for pinning (in the ORM's thread)."""
    await _in_thread(_record_offer)(server_id, fingerprint, definitions)


def record_check(
    server: Server,
    fingerprint: str,
    ok: bool,
    milliseconds: int,
    reason: str,
    definitions: list[dict[str, Any]],
) -> None:
    """An admin's check: the status, and what it offers for pinning as a connect would."""
    checks.save_result(server.pk, ok, milliseconds, reason, definitions)
    if ok and server.pinning != OFF:
        tool_pins.record_offer(server, fingerprint, definitions)


async def save_status(
    server_id: int, ok: bool, milliseconds: int, reason: str, definitions: list[dict[str, Any]]
) -> None:
    """The result of a gateway's connect, shown as the server's status (in the ORM's thread)."""
    await _in_thread(checks.save_result)(server_id, ok, milliseconds, reason, definitions)


def _with_fingerprint(config: ServerConfig) -> ServerConfig:
    object.__setattr__(config, "fingerprint", fingerprint(config))
    return config


def _load_key(prefix: str) -> KeyRecord | None:
    api_key = ApiKey.objects.filter(prefix=prefix).first()
    if api_key is None:
        return None
    # Read the version before the row: a change racing this load then forces a reload.
    version = cache.get(versions.version_key(api_key.tenant_id), 0)
    api_key.refresh_from_db()
    scoped = frozenset(api_key.toolboxes.values_list("name", flat=True))
    limited_to = scoped if api_key.limited else None
    return KeyRecord(
        key_id=api_key.pk,
        prefix=api_key.prefix,
        key_hash=api_key.key_hash,
        tenant_id=api_key.tenant_id,
        revoked=api_key.revoked_at is not None,
        expires_at=api_key.expires_at.timestamp() if api_key.expires_at else None,
        toolboxes=limited_to,
        version=version,
    )


def _touch_key(key_id: int, when: float) -> None:
    ApiKey.objects.filter(pk=key_id).update(last_used_at=datetime.fromtimestamp(when, tz=UTC))


def _in_thread(func):  # type: ignore[no-untyped-def]
    """Run ORM code off the event loop, closing connections Django would consider stale."""

    def wrapped(*args):  # type: ignore[no-untyped-def]
        close_old_connections()
        return func(*args)

    return sync_to_async(wrapped, thread_sensitive=True)


class ConfigStore:
    """This process's snapshots of key records and tenant configurations."""

    def __init__(self, shared: SharedStore) -> None:
        self.shared = shared  # where the per-tenant configuration versions are
        self.installation: str | None = None  # the database's (`installation()`), at start
        self._tenants: dict[int, TenantConfig] = {}
        self._keys: dict[str, KeyRecord] = {}

    async def version(self, tenant_id: int) -> int:
        return await self.shared.get(versions.version_key(tenant_id, self.installation), 0)

    async def key(self, prefix: str) -> KeyRecord | None:
        record = self._keys.get(prefix)
        if record is not None and record.version == await self.version(record.tenant_id):
            return record
        record = await _in_thread(_load_key)(prefix)
        if record is None:
            self._keys.pop(prefix, None)
        else:
            self._keys[prefix] = record
        return record

    async def tenant(self, tenant_id: int, version: int | None = None) -> TenantConfig | None:
        if version is None:
            version = await self.version(tenant_id)
        snapshot = self._tenants.get(tenant_id)
        if snapshot is None or snapshot.version != version:
            snapshot = await _in_thread(_load_tenant)(tenant_id, version)
            if snapshot is None:
                self._tenants.pop(tenant_id, None)
                return None
            self._tenants[tenant_id] = snapshot
        return snapshot

    async def touch_key(self, key_id: int, when: float) -> None:
        await _in_thread(_touch_key)(key_id, when)


def _installation() -> tuple[str, str]:
    return installation_id(), describe_database()


async def installation() -> tuple[str, str]:
    """This database's installation id (made on first use) and its description, for the
    gateway's start (toolboxes.installation)."""
    return await _in_thread(_installation)()


async def release_database() -> None:
    """Close the connections the ORM opened in asgiref's thread (at shutdown)."""
    await sync_to_async(connections.close_all, thread_sensitive=True)()
