"""The JSON configuration format (spec: "Config export format"), read and written.

Export writes, per tenant, `{"toolboxes": {name: {"description", "mcpServers": {...}}}}`
with servers in order and every field (secrets decrypted: the export is the admin's own
backup). Import reads it back all or nothing; every problem is reported with its JSON path
(`toolboxes.dev.mcpServers.fs.args[1]: must be a string`).

Import without `replace` creates or updates toolboxes and servers by name and removes
nothing: servers of an updated toolbox that the file does not list keep their place after
the listed ones. With `replace`, the tenant's configuration becomes exactly the file's;
toolboxes that stay are updated in place, so API keys limited to them stay limited.

A server made from a catalog entry is written `{"catalog": "<entry name>", "parameters":
{name: value}}` (secret values decrypted, like env values) with its filters, timeout, idle
timeout and enabled; on import the entry must exist.

Desktop files are read into one named toolbox: `{"mcpServers": {...}}` (Claude Desktop,
Cursor, Windsurf, Gemini CLI) or VS Code's `{"servers": {...}}`; other top-level keys of
such files (settings, VS Code's `inputs`) are ignored. There, as in the export format,
`"type": "http"` is taken for `streamable-http`, a server with a `url` (or Windsurf's
`serverUrl`, Gemini CLI's `httpUrl`) and no `type` is a Streamable HTTP one, and
`"disabled": true` means `"enabled": false`. One toolbox is written back in the plain
desktop form (`export_desktop`): `{"mcpServers": {...}}` alone, stdio servers as
command/args/env, remote ones as `"type": "http"` (or `"sse"`)/url/headers.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.db import transaction
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticError

from toolboxes.catalog import launch_of
from toolboxes.models import CatalogEntry, PinningPolicy, Server, Tenant, Toolbox, Transport

DEFAULT_TIMEOUT = 60
JSON_FIELD_NAMES = {
    "tool_filters": "toolFilters",
    "transport": "type",
    "idle_timeout": "idleTimeout",
    "memory_limit_mb": "limits.memoryMb",
    "process_limit": "limits.processes",
    "cpu_limit_seconds": "limits.cpuSeconds",
    "open_files_limit": "limits.openFiles",
}


class ConfigError(ValueError):
    """A configuration file that cannot be imported; the message names path and field."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class _ServerSpec(_Spec):
    tool_filters: list[str] = Field(default_factory=lambda: ["*"], alias="toolFilters")
    timeout: int = Field(default=DEFAULT_TIMEOUT, ge=1)
    idle_timeout: int | None = Field(default=None, ge=1, alias="idleTimeout")
    pinning: Literal["trust-first", "approve-all", "off"] = PinningPolicy.TRUST_FIRST.value
    enabled: bool = True


class MountSpec(_Spec):
    path: str
    writable: bool = False


class LimitsSpec(_Spec):
    """Sandbox limits; a missing one is the gateway's WORKBENCH_SANDBOX_* default."""

    memory_mb: int | None = Field(default=None, ge=1, alias="memoryMb")
    processes: int | None = Field(default=None, ge=1)
    cpu_seconds: int | None = Field(default=None, ge=1, alias="cpuSeconds")
    open_files: int | None = Field(default=None, ge=1, alias="openFiles")


_LIMIT_ATTRS = {
    "memoryMb": "memory_mb",
    "processes": "processes",
    "cpuSeconds": "cpu_seconds",
    "openFiles": "open_files",
}
# Server model field <- limits key in the JSON.
LIMIT_FIELDS = {
    "memory_limit_mb": "memoryMb",
    "process_limit": "processes",
    "cpu_limit_seconds": "cpuSeconds",
    "open_files_limit": "openFiles",
}


class StdioServerSpec(_ServerSpec):
    type: Literal["stdio"] | None = None
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str = ""
    mounts: list[MountSpec] = Field(default_factory=list)
    network: bool = True
    egress_allow: list[str] = Field(default_factory=list, alias="egressAllow")
    limits: LimitsSpec = Field(default_factory=LimitsSpec)


class CatalogServerSpec(_ServerSpec):
    """A server made from a catalog entry: the entry's name and its parameter values."""

    catalog: str
    parameters: dict[str, str] = Field(default_factory=dict)


class RemoteServerSpec(_ServerSpec):
    type: Literal["streamable-http", "sse"]
    url: str
    headers: dict[str, str] = Field(default_factory=dict)


class ToolboxSpec(_Spec):
    description: str
    mcp_servers: dict[str, dict[str, Any]] = Field(default_factory=dict, alias="mcpServers")

    @field_validator("description")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


class TenantSpec(_Spec):
    toolboxes: dict[str, ToolboxSpec]


# Where a desktop file keeps its servers, and who writes it so.
DESKTOP_KEYS = {
    "mcpServers": "Claude Desktop, Cursor, Windsurf, Gemini CLI",
    "servers": "VS Code",
}
EXPORT_KEY = "toolboxes"
# Desktop spellings of a remote server's URL (Windsurf, Gemini CLI): Streamable HTTP.
URL_ALIASES = ("serverUrl", "httpUrl")


def _keys_found(data: dict[str, Any]) -> str:
    keys = [f'"{key}"' for key in list(data)[:5]]
    return "has " + ", ".join(keys) + (", ..." if len(data) > 5 else "") if keys else "is empty"


def _desktop_keys() -> str:
    return " or ".join(f'"{key}" ({clients})' for key, clients in DESKTOP_KEYS.items())


# Export


def _sorted(values: dict[str, str]) -> dict[str, str]:
    # By name: the same text from every database (PostgreSQL's jsonb keeps no key order).
    return dict(sorted(values.items()))


def export_server(server: Server) -> dict[str, Any]:
    data: dict[str, Any]
    if server.catalog_entry_id is not None:
        values = {**server.parameters, **server.secret_parameters}
        data = {"catalog": server.catalog_entry.name, "parameters": _sorted(values)}
    elif server.transport == Transport.STDIO:
        data = {"command": server.command, "args": list(server.args), "env": _sorted(server.env)}
        if server.cwd:
            data["cwd"] = server.cwd
        if server.mounts:
            data["mounts"] = [dict(mount) for mount in server.mounts]
        if not server.network:
            data["network"] = False
        if server.egress_allow:
            data["egressAllow"] = list(server.egress_allow)
        limits = {
            key: getattr(server, field)
            for field, key in LIMIT_FIELDS.items()
            if getattr(server, field) is not None
        }
        if limits:
            data["limits"] = limits
    else:
        data = {"type": server.transport, "url": server.url, "headers": _sorted(server.headers)}
    data["toolFilters"] = list(server.tool_filters)
    if server.timeout != DEFAULT_TIMEOUT:
        data["timeout"] = server.timeout
    if server.idle_timeout is not None:
        data["idleTimeout"] = server.idle_timeout
    if server.pinning != PinningPolicy.TRUST_FIRST:
        data["pinning"] = server.pinning
    if not server.enabled:
        data["enabled"] = False
    return data


def export_tenant(tenant: Tenant) -> dict[str, Any]:
    toolboxes: dict[str, Any] = {}
    servers_with_entries = "servers__catalog_entry"
    for toolbox in tenant.toolboxes.order_by("pk").prefetch_related(servers_with_entries):
        servers = sorted(toolbox.servers.all(), key=lambda server: (server.position, server.pk))
        toolboxes[toolbox.name] = {
            "description": toolbox.description,
            "mcpServers": {server.name: export_server(server) for server in servers},
        }
    return {"toolboxes": toolboxes}


def export_all() -> dict[str, Any]:
    return {"tenants": {tenant.slug: export_tenant(tenant) for tenant in Tenant.objects.all()}}


def desktop_server(server: Server) -> tuple[dict[str, Any], list[str]]:
    """One server as desktop clients read it, and the names of what that form cannot hold
    (set on this server, so a desktop client would not apply it)."""
    launch = launch_of(server)  # a catalog-made server: what it runs, values filled in
    data: dict[str, Any]
    if launch.transport == Transport.STDIO:
        data = {"command": launch.command, "args": launch.args, "env": _sorted(launch.env)}
        left_out = [
            name
            for name, is_set in (
                ("cwd", bool(launch.cwd)),
                ("mounts", bool(launch.mounts)),
                ("network", not launch.network),
                ("egressAllow", bool(launch.egress_allow)),
                ("limits", any(getattr(launch, field) is not None for field in LIMIT_FIELDS)),
            )
            if is_set
        ]
    else:
        kind = "http" if launch.transport == Transport.STREAMABLE_HTTP else "sse"
        data = {"type": kind, "url": launch.url, "headers": _sorted(launch.headers)}
        left_out = []
    if "*" not in server.tool_filters:
        left_out.append("toolFilters")
    if server.timeout != DEFAULT_TIMEOUT:
        left_out.append("timeout")
    if server.idle_timeout is not None:
        left_out.append("idleTimeout")
    return data, left_out


def export_desktop(toolbox: Toolbox) -> tuple[dict[str, Any], list[str]]:
    """One toolbox as a plain desktop `{"mcpServers": {...}}` file (secrets decrypted, as in
    the export format), and a note per server on what the file leaves out."""
    servers: dict[str, Any] = {}
    notes: list[str] = []
    ordered = toolbox.servers.select_related("catalog_entry").order_by("position", "pk")
    for server in ordered:
        if not server.enabled:
            notes.append(f"Left out server '{server.name}': it is disabled.")
            continue
        servers[server.name], left_out = desktop_server(server)
        if left_out:
            notes.append(
                f"Server '{server.name}': a desktop file cannot hold {', '.join(left_out)}; "
                "a desktop client runs it without them."
            )
    return {"mcpServers": servers}, notes


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# Import


def loads(text: str) -> Any:
    """JSON with duplicate keys refused (a later key would silently win otherwise)."""

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise ConfigError(f"Invalid JSON: duplicate key '{key}'")
            seen[key] = value
        return seen

    try:
        return json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise ConfigError(f"Invalid JSON: {exc.msg} ({where})") from None


def _path(*parts: str | int) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


_PYDANTIC_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "is not a known field",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
    "greater_than_equal": "must be at least 1",
}


def _pydantic_error(exc: PydanticError, *prefix: str | int) -> ConfigError:
    error = exc.errors(include_url=False)[0]
    kind = error["type"]
    if kind == "literal_error":
        message = f"must be one of {error['ctx']['expected']}"
    elif kind == "value_error":
        message = str(error["ctx"]["error"])
    else:
        message = _PYDANTIC_MESSAGES.get(kind, error["msg"])
    return ConfigError(f"{_path(*prefix, *error['loc']) or 'top level'}: {message}")


def _server_spec(
    data: Any, *where: str | int
) -> StdioServerSpec | RemoteServerSpec | CatalogServerSpec:
    if not isinstance(data, dict):
        raise ConfigError(f"{_path(*where)}: must be an object")
    data = dict(data)
    if "disabled" in data and "enabled" not in data and isinstance(data["disabled"], bool):
        data["enabled"] = not data.pop("disabled")
    for alias in URL_ALIASES:
        if alias in data and "url" not in data and "type" not in data:
            data["url"] = data.pop(alias)
    if data.get("type") == "http" or ("url" in data and "type" not in data):
        data["type"] = "streamable-http"
    model: type[_ServerSpec] = (
        RemoteServerSpec if data.get("type") in ("streamable-http", "sse") else StdioServerSpec
    )
    if "catalog" in data:
        model = CatalogServerSpec
    try:
        return model.model_validate(data)
    except PydanticError as exc:
        raise _pydantic_error(exc, *where) from None


def _apply_server(
    toolbox: Toolbox,
    name: str,
    spec: StdioServerSpec | RemoteServerSpec | CatalogServerSpec,
    position: int,
    *where: str,
) -> None:
    server = toolbox.servers.filter(name=name).first() or Server(toolbox=toolbox, name=name)
    server.position = position
    server.tool_filters = spec.tool_filters
    server.timeout = spec.timeout
    server.idle_timeout = spec.idle_timeout
    server.pinning = spec.pinning
    server.enabled = spec.enabled
    server.catalog_entry, server.parameters, server.secret_parameters = None, {}, {}
    if isinstance(spec, CatalogServerSpec):
        server.catalog_entry = CatalogEntry.objects.filter(name=spec.catalog).first()
        if server.catalog_entry is None:
            raise ConfigError(f"{_path(*where, 'catalog')}: no catalog entry '{spec.catalog}'")
        server.parameters = spec.parameters  # the model files secret ones encrypted
        server.command, server.args, server.env, server.cwd = "", [], {}, ""
        server.url, server.headers, server.mounts, server.egress_allow = "", {}, [], []
    elif isinstance(spec, StdioServerSpec):
        server.transport = Transport.STDIO
        server.command, server.args, server.env, server.cwd = (
            spec.command,
            spec.args,
            spec.env,
            spec.cwd,
        )
        server.url, server.headers = "", {}
        server.mounts = [mount.model_dump(exclude_defaults=True) for mount in spec.mounts]
        server.network = spec.network
        server.egress_allow = spec.egress_allow
        for field, key in LIMIT_FIELDS.items():
            setattr(server, field, getattr(spec.limits, _LIMIT_ATTRS[key]))
    else:
        server.transport = spec.type
        server.url, server.headers = spec.url, spec.headers
        server.command, server.args, server.env, server.cwd = "", [], {}, ""
        server.mounts, server.network, server.egress_allow = [], True, []
        for field in LIMIT_FIELDS:
            setattr(server, field, None)
    _save(server, *where)


def _save(instance: Server | Toolbox, *where: str) -> None:
    try:
        instance.full_clean()
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        if field == "__all__":
            raise ConfigError(f"{_path(*where)}: {messages[0]}") from None
        if field == "name":
            raise ConfigError(f"{_path(*where)}: invalid name: {messages[0]}") from None
        raise ConfigError(
            f"{_path(*where, JSON_FIELD_NAMES.get(field, field))}: {messages[0]}"
        ) from None
    instance.save()


def _apply_servers(
    toolbox: Toolbox, servers: dict[str, Any], *, replace: bool, where: tuple[str, ...]
) -> int:
    specs = {name: _server_spec(data, *where, name) for name, data in servers.items()}
    for position, (name, spec) in enumerate(specs.items()):
        _apply_server(toolbox, name, spec, position, *where, name)
    others = toolbox.servers.exclude(name__in=list(specs)).order_by("position", "pk")
    if replace:
        others.delete()
    else:
        for position, server in enumerate(others, start=len(specs)):
            Server.objects.filter(pk=server.pk).update(position=position)
    return len(specs)


def import_tenant(tenant: Tenant, data: Any, *, replace: bool = False) -> tuple[int, int]:
    """Import the export format into tenant; returns (toolboxes, servers) imported."""
    if isinstance(data, dict) and "tenants" in data and "toolboxes" not in data:
        raise ConfigError(
            "tenants: this is an export of all tenants; import one tenant's part "
            "(the object under tenants.<slug>)"
        )
    if isinstance(data, dict) and EXPORT_KEY not in data:
        raise ConfigError(
            f"{EXPORT_KEY}: is required (this file {_keys_found(data)}); accepted top-level "
            f'keys: "{EXPORT_KEY}" (export_config\'s format), or with --toolbox NAME '
            f"{_desktop_keys()}"
        )
    try:
        spec = TenantSpec.model_validate(data)
    except PydanticError as exc:
        raise _pydantic_error(exc) from None
    servers = 0
    with transaction.atomic():
        for name, toolbox_spec in spec.toolboxes.items():
            where = ("toolboxes", name)
            toolbox = tenant.toolboxes.filter(name=name).first() or Toolbox(
                tenant=tenant, name=name
            )
            toolbox.description = toolbox_spec.description
            _save(toolbox, *where)
            servers += _apply_servers(
                toolbox, toolbox_spec.mcp_servers, replace=replace, where=(*where, "mcpServers")
            )
        if replace:
            tenant.toolboxes.exclude(name__in=list(spec.toolboxes)).delete()
    return len(spec.toolboxes), servers


def desktop_servers(data: Any) -> dict[str, Any]:
    """The servers of a desktop file: under "mcpServers", or VS Code's "servers"."""
    if not isinstance(data, dict):
        raise ConfigError("top level: must be an object")
    present = [key for key in DESKTOP_KEYS if key in data]
    if len(present) > 1:
        raise ConfigError('top level: both "mcpServers" and "servers"; keep one')
    if not present:
        raise ConfigError(
            f"top level: no servers (this file {_keys_found(data)}); accepted top-level keys: "
            f'{_desktop_keys()}, or "{EXPORT_KEY}" (export_config\'s format)'
        )
    servers = data[present[0]]
    if not isinstance(servers, dict):
        raise ConfigError(f"{present[0]}: must be an object")
    return servers


def import_mcp_servers(
    tenant: Tenant, toolbox_name: str, data: Any, *, replace: bool = False
) -> int:
    """Import a desktop client's `{"mcpServers": {...}}` (or VS Code's `{"servers": ...}`)
    into one toolbox of tenant."""
    servers = desktop_servers(data)
    key = next(key for key in DESKTOP_KEYS if key in data)
    with transaction.atomic():
        toolbox = tenant.toolboxes.filter(name=toolbox_name).first()
        if toolbox is None:
            toolbox = Toolbox(tenant=tenant, name=toolbox_name, description="Imported servers")
            _save(toolbox, "toolbox")
        return _apply_servers(toolbox, servers, replace=replace, where=(key,))
