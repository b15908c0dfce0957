"""Import: the JSON file read back all or nothing, and desktop files into one toolbox."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from pydantic import ValidationError as PydanticError

from toolboxes.config_file.policies import KEY as POLICIES
from toolboxes.config_file.policies import import_policies
from toolboxes.config_file.schema import (
    DESKTOP_KEYS,
    EXPORT_KEY,
    LIMIT_ATTRS,
    URL_ALIASES,
    CatalogServerSpec,
    ConfigError,
    RemoteServerSpec,
    StdioServerSpec,
    TenantSpec,
    config_error,
    desktop_keys,
    json_path,
    keys_found,
)
from toolboxes.models import AuthMode, CatalogEntry, Server, Tenant, Toolbox, Transport
from toolboxes.server_fields import FILE_KEYS, LIMIT_KEYS


def _server_spec(
    data: Any, *where: str | int
) -> StdioServerSpec | RemoteServerSpec | CatalogServerSpec:
    if not isinstance(data, dict):
        raise ConfigError(f"{json_path(*where)}: must be an object")
    data = dict(data)
    if "disabled" in data and "enabled" not in data and isinstance(data["disabled"], bool):
        data["enabled"] = not data.pop("disabled")
    for alias in URL_ALIASES:
        if alias in data and "url" not in data and "type" not in data:
            data["url"] = data.pop(alias)
    if data.get("type") == "http" or ("url" in data and "type" not in data):
        data["type"] = "streamable-http"
    model: type[StdioServerSpec | RemoteServerSpec | CatalogServerSpec] = (
        RemoteServerSpec if data.get("type") in ("streamable-http", "sse") else StdioServerSpec
    )
    if "catalog" in data:
        model = CatalogServerSpec
    try:
        return model.model_validate(data)
    except PydanticError as exc:
        raise config_error(exc, *where) from None


def _apply_auth(server: Server, spec: RemoteServerSpec) -> None:
    """The sign-in: the file's OAuth mode and client, else static headers when it has any."""
    auth = spec.auth
    if auth is None:
        server.auth = AuthMode.HEADERS if spec.headers else AuthMode.NONE
        server.oauth_client, server.oauth_scopes = {}, ""  # type: ignore[assignment]
        return
    server.auth = auth.mode
    client = {"client_id": auth.client_id, "client_secret": auth.client_secret}
    server.oauth_client = {name: value for name, value in client.items() if value}  # type: ignore[assignment]
    server.oauth_scopes = auth.scopes


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
    server.auth, server.oauth_client, server.oauth_scopes = AuthMode.NONE, {}, ""
    if isinstance(spec, CatalogServerSpec):
        server.catalog_entry = CatalogEntry.objects.filter(name=spec.catalog).first()
        if server.catalog_entry is None:
            raise ConfigError(f"{json_path(*where, 'catalog')}: no catalog entry '{spec.catalog}'")
        server.parameters = spec.parameters  # the model files secret ones encrypted
        server.command, server.args, server.env, server.cwd = "", [], {}, ""
        server.url, server.headers, server.mounts, server.egress_allow = "", {}, [], []
        server.host_ports = []
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
        server.host_ports = spec.host_ports
        for field, key in LIMIT_KEYS.items():
            setattr(server, field, getattr(spec.limits, LIMIT_ATTRS[key]))
    else:
        server.transport = spec.type
        server.url, server.headers = spec.url, spec.headers
        _apply_auth(server, spec)
        server.command, server.args, server.env, server.cwd = "", [], {}, ""
        server.mounts, server.network, server.egress_allow = [], True, []
        server.host_ports = []
        for field in LIMIT_KEYS:
            setattr(server, field, None)
    _save(server, *where)


def _save(instance: Server | Toolbox, *where: str) -> None:
    try:
        instance.full_clean()
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        if field == "__all__":
            raise ConfigError(f"{json_path(*where)}: {messages[0]}") from None
        if field == "name":
            raise ConfigError(f"{json_path(*where)}: invalid name: {messages[0]}") from None
        raise ConfigError(
            f"{json_path(*where, FILE_KEYS.get(field, field))}: {messages[0]}"
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
            f"{EXPORT_KEY}: is required (this file {keys_found(data)}); accepted top-level "
            f'keys: "{EXPORT_KEY}" (export_config\'s format), or with --toolbox NAME '
            f"{desktop_keys()}"
        )
    try:
        spec = TenantSpec.model_validate(data)
    except PydanticError as exc:
        raise config_error(exc) from None
    servers = 0
    with transaction.atomic():
        for name, toolbox_spec in spec.toolboxes.items():
            where = ("toolboxes", name)
            toolbox = tenant.toolboxes.filter(name=name).first() or Toolbox(
                tenant=tenant, name=name
            )
            toolbox.description = toolbox_spec.description
            toolbox.offered_alone = toolbox_spec.offered_alone
            _save(toolbox, *where)
            servers += _apply_servers(
                toolbox, toolbox_spec.mcp_servers, replace=replace, where=(*where, "mcpServers")
            )
        if replace:
            tenant.toolboxes.exclude(name__in=list(spec.toolboxes)).delete()
        if spec.policies is not None:  # after the toolboxes its rules name
            import_policies(tenant, data[POLICIES])
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
            f"top level: no servers (this file {keys_found(data)}); accepted top-level keys: "
            f'{desktop_keys()}, or "{EXPORT_KEY}" (export_config\'s format)'
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
