"""What the gateway reads from the admins' world: immutable snapshots of API keys and tenant
configurations (`snapshots`), and the database's installation.

Snapshots live in this process and are reloaded when the tenant's version counter in the
shared cache moves (`toolboxes.versions`, bumped on every save in any process), so the hot
path reads one cache value and never the database. Secrets stay in this process's memory.
Connected accounts' tokens are read per server and person (`saved_sign_in`), when a
gateway has none or its tenant's version moved. What the gateway writes is
`database.records`; OAuth access tokens are asked about by `front.auth`, through
`accounts.oauth_callers`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import MappingProxyType
from typing import Any, TypeVar

from django.core.cache import cache
from django.db.models import F, Prefetch

from accounts.models.members import member_refusal
from connections import store as sign_ins
from kernel.pins import Pins
from kernel.tenant_paths import tenant_roots
from mcp_gateway.database.threads import in_thread
from mcp_gateway.snapshots.callers import KeyLimits, KeyRecord
from mcp_gateway.snapshots.connected import SavedSignIn
from mcp_gateway.snapshots.sandbox import Limits, Mount, SandboxSpec
from mcp_gateway.snapshots.servers import ServerConfig, TenantConfig, ToolboxConfig, fingerprint
from mcp_gateway.store.shared import SharedStore
from toolboxes import pins as tool_pins
from toolboxes import versions
from toolboxes.installation import database_file, describe_database, installation_id
from toolboxes.launch import ServerLaunch, launch_of
from toolboxes.models import ApiKey, PolicyDefaults, Server, Tenant
from toolboxes.policies import tenant_policy
from toolboxes.server_fields import SNAPSHOT_READS
from toolboxes.validators import host_port_numbers


def load_tenant(tenant_id: int, version: int) -> TenantConfig | None:
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return None
    toolboxes = []
    server_ids = Server.objects.filter(toolbox__tenant=tenant).values_list("pk", flat=True)
    pinned = tool_pins.snapshot(server_ids)
    # Only the fields a snapshot carries (`toolboxes.server_fields`): not the last check's.
    servers_read = Prefetch("servers", Server.objects.only(*SNAPSHOT_READS))
    toolboxes_with_servers = tenant.toolboxes.order_by("name").prefetch_related(
        servers_read, "servers__catalog_entry__parameters"
    )
    for toolbox in toolboxes_with_servers:
        servers = []
        for server in sorted(toolbox.servers.all(), key=lambda s: (s.position, s.pk)):
            if server.enabled:
                servers.append(_server_config(tenant.pk, server, pinned))
        toolboxes.append(
            ToolboxConfig(toolbox.name, toolbox.description, tuple(servers), toolbox.offered_alone)
        )
    return TenantConfig(
        tenant.pk,
        tenant.slug,
        tenant.is_active,
        version,
        tuple(toolboxes),
        tenant.max_connections,
        tenant_policy(tenant),  # who may call which tool
        PolicyDefaults.objects.filter(tenant=tenant, guard_secrets=True).exists(),
    )


def last_listings(tenant_id: int) -> dict[int, tuple[bool | None, list[dict[str, Any]]]]:
    """Each server's last check (an admin's or a gateway connect's): whether it succeeded
    (None: never checked) and the tool definitions it listed, by server id (the admin's
    tool search, `for_admins.tool_search`)."""
    rows = Server.objects.filter(toolbox__tenant_id=tenant_id)
    return {
        server_id: (ok, list(tools or []))
        for server_id, ok, tools in rows.values_list("pk", "last_check_ok", "last_check_tools")
    }


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
        auth=launch.auth,
        oauth_client_id=launch.oauth_client.get("client_id", ""),
        oauth_client_secret=launch.oauth_client.get("client_secret", ""),
        oauth_scopes=launch.oauth_scopes,
        server_id=server.pk,
        sandbox=_sandbox_spec(tenant_id, launch, tenant_roots(server.toolbox.tenant.slug)),
    )
    return _with_fingerprint(config)


def _secret_values(server: Server) -> tuple[str, ...]:
    """The values of a catalog-made server's secret parameters (defaults included)."""
    if server.catalog_entry_id is None:
        return ()
    values = server.catalog_values()
    secret = [p.name for p in server.catalog_entry.parameters.all() if p.secret]
    return tuple(sorted({values[name] for name in secret if values.get(name)}))


def server_config(server: Server) -> ServerConfig:
    """One server as the gateway would connect it (an admin's check; enabled or not)."""
    return _server_config(server.toolbox.tenant_id, server, tool_pins.snapshot([server.pk]))


def _sandbox_spec(tenant_id: int, server: ServerLaunch, roots: tuple[str, ...]) -> SandboxSpec:
    mounts = tuple(Mount(item["path"], bool(item.get("writable"))) for item in server.mounts)
    limits = Limits(
        server.memory_limit_mb,
        server.process_limit,
        server.cpu_limit_seconds,
        server.open_files_limit,
    )
    allow = tuple(server.egress_allow)
    ports = host_port_numbers(server.host_ports)
    return SandboxSpec(tenant_id, mounts, server.network, limits, allow, roots, ports)


def _pins(server: Server, pinned: dict[int, tool_pins.ServerPins]) -> Pins:
    state = pinned[server.pk]
    return Pins(server.pinning, MappingProxyType(state.approved), state.trusted_fingerprint)


def _with_fingerprint(config: ServerConfig) -> ServerConfig:
    object.__setattr__(config, "fingerprint", fingerprint(config))
    return config


def load_key(prefix: str) -> KeyRecord | None:
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
        owner_id=api_key.owner_id,
        owner_refusal=_owner_refusal(api_key),
        limits=KeyLimits(
            api_key.rate_limit,
            api_key.rate_burst,
            api_key.open_rate_limit,
            api_key.open_rate_burst,
        ),
    )


def _owner_refusal(api_key: ApiKey) -> str:
    """Why a personal key's member may no longer use it ("" while they may), as for an
    OAuth grant: its memberships' changes move the tenant's version, so this is read again."""
    if api_key.owner_id is None:
        return ""
    return member_refusal(api_key.owner, api_key.tenant_id)


R = TypeVar("R")


class Snapshots:
    """This process's snapshots of key records and tenant configurations.

    A configuration change (a tool's first offer recorded, say) makes every session's next
    request load them again; those loads are shared (`_once`): without it, 100 sessions'
    next requests made 100 loads of one key and one tenant, queued in the ORM's one thread,
    and their answers waited up to 2 s (bench/concurrency.py's p99)."""

    def __init__(self, shared: SharedStore, installation: str | None = None) -> None:
        self.shared = shared  # where the per-tenant configuration versions are
        self.installation = installation  # the database's (`installation()`), read first
        self._tenants: dict[int, TenantConfig] = {}
        self._keys: dict[str, KeyRecord] = {}
        self._loading: dict[tuple[str, object], asyncio.Future[Any]] = {}

    async def _once(self, what: tuple[str, object], load: Callable[[], Awaitable[R]]) -> R:
        """`load()`, or the same load already under way: one at a time per `what`. Shielded,
        so that a waiter cancelled (its client gone) cancels nobody else's."""
        pending = self._loading.get(what)
        if pending is None:
            pending = asyncio.ensure_future(load())
            self._loading[what] = pending
            pending.add_done_callback(lambda _: self._loading.pop(what, None))
        result: R = await asyncio.shield(pending)
        return result

    async def version(self, tenant_id: int) -> int:
        return await self.shared.get(versions.version_key(tenant_id, self.installation), 0)

    async def key(self, prefix: str) -> KeyRecord | None:
        record = self._keys.get(prefix)
        if record is not None and record.version == await self.version(record.tenant_id):
            return record
        record = await self._once(("key", prefix), lambda: in_thread(load_key)(prefix))
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
            snapshot = await self._once(
                ("tenant", (tenant_id, version)), lambda: in_thread(load_tenant)(tenant_id, version)
            )
            if snapshot is None:
                self._tenants.pop(tenant_id, None)
                return None
            self._tenants[tenant_id] = snapshot
        return snapshot


def _installation() -> tuple[str, str, str]:
    return installation_id(), describe_database(), database_file()


async def installation() -> tuple[str, str, str]:
    """This database's installation id (made on first use), its description and its SQLite
    file ("" for a server), for the gateway's start (toolboxes.installation)."""
    return await in_thread(_installation)()


async def saved_sign_in(server_id: int, user_id: int | None) -> SavedSignIn | None:
    """A server's connected account for a person (None: the tenant's), tokens decrypted."""
    found = await in_thread(sign_ins.saved)(server_id, user_id)
    return SavedSignIn(*found) if found is not None else None


def _stored_listings(server_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    rows = Server.objects.filter(
        pk__in=server_ids, last_check_ok=True, last_check_at__gte=F("updated_at")
    ).values_list("pk", "last_check_tools")
    return {pk: tools if isinstance(tools, list) else [] for pk, tools in rows}


async def stored_listings(server_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The tool definitions (`kernel.pins.definition`) of each of these servers whose last
    connect or check, by any process or replica or the admin, succeeded since the server
    was last edited (an edit may change what it offers): what the search index knows of a
    server no connection of this process has listed."""
    return await in_thread(_stored_listings)(server_ids)
