"""Export: a tenant's toolboxes as the JSON file (every field, secrets decrypted: the
export is the admin's own backup), and one toolbox in the plain desktop form."""

from __future__ import annotations

from typing import Any

from toolboxes.config_file.policies import KEY as POLICIES
from toolboxes.config_file.policies import export_policies
from toolboxes.config_file.schema import DEFAULT_TIMEOUT, OFFERED_ALONE
from toolboxes.launch import launch_of
from toolboxes.models import OAUTH_MODES, PinningPolicy, Server, Tenant, Toolbox, Transport
from toolboxes.server_fields import LIMIT_KEYS


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
        if server.host_ports:
            data["hostPorts"] = list(server.host_ports)
        limits = {
            key: getattr(server, field)
            for field, key in LIMIT_KEYS.items()
            if getattr(server, field) is not None
        }
        if limits:
            data["limits"] = limits
    else:
        data = {"type": server.transport, "url": server.url, "headers": _sorted(server.headers)}
    if server.auth in OAUTH_MODES:
        data["auth"] = export_auth(server)
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


def export_auth(server: Server) -> dict[str, str]:
    """A server's OAuth sign-in: its mode, and the admin-entered client (the secret in clear,
    as env values: the export is the admin's own backup). Tokens are never exported."""
    auth = {"mode": str(server.auth)}
    client = server.oauth_client_values()
    if client.get("client_id"):
        auth["clientId"] = client["client_id"]
    if client.get("client_secret"):
        auth["clientSecret"] = client["client_secret"]
    if server.oauth_scopes:
        auth["scopes"] = server.oauth_scopes
    return auth


def export_tenant(tenant: Tenant) -> dict[str, Any]:
    toolboxes: dict[str, Any] = {}
    servers_with_entries = "servers__catalog_entry"
    for toolbox in tenant.toolboxes.order_by("pk").prefetch_related(servers_with_entries):
        servers = sorted(toolbox.servers.all(), key=lambda server: (server.position, server.pk))
        toolboxes[toolbox.name] = {"description": toolbox.description}
        if not toolbox.offered_alone:  # written only when off (on by default)
            toolboxes[toolbox.name][OFFERED_ALONE] = False
        toolboxes[toolbox.name]["mcpServers"] = {
            server.name: export_server(server) for server in servers
        }
    document: dict[str, Any] = {"toolboxes": toolboxes}
    policies = export_policies(tenant)
    if policies is not None:  # who may call which tool (`config_file.policies`)
        document[POLICIES] = policies
    return document


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
                ("hostPorts", bool(launch.host_ports)),
                ("limits", any(getattr(launch, field) is not None for field in LIMIT_KEYS)),
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
