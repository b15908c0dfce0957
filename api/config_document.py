"""A tenant's configuration as one document (the export format of `toolboxes.config_file`)
for the API: answered with its secrets left out, applied all or nothing with the secrets
it leaves out kept, its version, and the plan of what applying it changes.

Secret values (env and header values, secret catalog parameters, an OAuth client's
secret) are answered as `null` to everyone, and so, to others than operators, is how a raw
server runs (its command, arguments, URL, sign-in, ...: tenant admins make servers from
the catalog); a `null` in a document applied keeps the stored value, while the server stays
where it was (`toolboxes.destinations`: a kept secret never follows it to another entry,
command or URL), and a tenant admin's document that makes or changes a raw server's way of
running is refused. The version is a keyed digest of the whole stored document (secrets
included, so that changing only a secret moves it), never a digest anyone could test a
guessed secret against.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from django.conf import settings
from django.db import transaction

from toolboxes.config_file import ConfigError, export_tenant, import_tenant, json_path
from toolboxes.config_file.plan import Plan, plan_of
from toolboxes.destinations import destination_of, moved, type_again
from toolboxes.models import Server, Tenant, Toolbox
from toolboxes.server_fields import names

# A raw server's maps of secret values (env, headers): values null, names kept.
SECRET_MAPS = names("file_key", lambda field: field.raw and field.secret and not field.hidden)
# How a raw server runs (and signs in): shown to operators only, null for others (kept
# when applied).
RAW_KEYS = names("file_key", lambda field: field.raw and field.hidden)
# What makes or alters a raw server: all it runs by, or turning to or from the catalog.
RAW_CHANGES = {*names("file_key", lambda field: field.raw), "catalog"}
CLIENT_SECRET = "clientSecret"  # in a server's "auth"
NO_STORED_VALUE = "has no stored value to keep"
# A server's secret values kept from the stored document: "toolbox/server" -> their paths
# within the server ("env.TOKEN", "auth.clientSecret").
Kept = dict[str, list[str]]


def version(document: dict[str, Any]) -> str:
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    key = hashlib.sha256(b"workbench-config-version:" + settings.SECRET_KEY.encode()).digest()
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()[:32]


def _secret_parameters(tenant: Tenant) -> dict[tuple[str, str], set[str]]:
    rows = Server.objects.filter(toolbox__tenant=tenant).exclude(secret_parameters={})
    return {
        (server.toolbox.name, server.name): set(server.secret_parameters)
        for server in rows.select_related("toolbox")
    }


def redacted(tenant: Tenant, document: dict[str, Any], *, operator: bool) -> dict[str, Any]:
    """The document with every secret value replaced by null (names kept), and for others
    than operators how each raw server runs too."""
    secret_parameters = _secret_parameters(tenant)
    result = json.loads(json.dumps(document))
    for toolbox_name, toolbox in result["toolboxes"].items():
        for server_name, server in toolbox["mcpServers"].items():
            for name in SECRET_MAPS:
                if name in server:
                    server[name] = dict.fromkeys(server[name])
            if CLIENT_SECRET in server.get("auth", {}):
                server["auth"][CLIENT_SECRET] = None
            if not operator and "catalog" not in server:
                for name in RAW_KEYS:
                    if name in server:
                        server[name] = None
            secret = secret_parameters.get((toolbox_name, server_name), set())
            for name in server.get("parameters", {}):
                if name in secret:
                    server["parameters"][name] = None
    return result


def with_kept_values(
    data: Any, stored: dict[str, Any], secret_parameters: dict[tuple[str, str], set[str]]
) -> tuple[Any, Kept]:
    """`data` with each null secret value, and each null field of how a raw server runs,
    replaced by the stored one of the same server; and the secret values so kept."""
    kept: Kept = {}
    if not isinstance(data, dict) or not isinstance(data.get("toolboxes"), dict):
        return data, kept
    data = json.loads(json.dumps(data))
    for toolbox_name, toolbox in data["toolboxes"].items():
        servers = toolbox.get("mcpServers") if isinstance(toolbox, dict) else None
        if not isinstance(servers, dict):
            continue
        for server_name, server in servers.items():
            if not isinstance(server, dict):
                continue
            old = stored["toolboxes"].get(toolbox_name, {}).get("mcpServers", {}).get(server_name)
            where = f"toolboxes.{toolbox_name}.mcpServers.{server_name}"
            paths = kept.setdefault(f"{toolbox_name}/{server_name}", [])
            for name in RAW_KEYS:
                if name in server and server[name] is None:
                    if name not in (old or {}):
                        raise ConfigError(f"{where}.{name}: {NO_STORED_VALUE}")
                    server[name] = old[name]
                    if name == "auth" and CLIENT_SECRET in old[name]:
                        paths.append(f"auth.{CLIENT_SECRET}")
            auth = server.get("auth")
            if isinstance(auth, dict) and CLIENT_SECRET in auth and auth[CLIENT_SECRET] is None:
                secret = ((old or {}).get("auth") or {}).get(CLIENT_SECRET)
                if secret is None:
                    raise ConfigError(f"{where}.auth.{CLIENT_SECRET}: {NO_STORED_VALUE}")
                auth[CLIENT_SECRET] = secret
                paths.append(f"auth.{CLIENT_SECRET}")
            secret_names = secret_parameters.get((toolbox_name, server_name), set())
            for name in (*SECRET_MAPS, "parameters"):
                values = server.get(name)
                if not isinstance(values, dict):
                    continue
                for key, value in values.items():
                    if value is not None:
                        continue
                    value = (old or {}).get(name, {}).get(key)
                    if value is None:
                        raise ConfigError(f"{where}.{name}.{key}: {NO_STORED_VALUE}")
                    values[key] = value
                    if name != "parameters" or key in secret_names:
                        paths.append(f"{name}.{key}")
    return data, {name: paths for name, paths in kept.items() if paths}


def refuse_moved_secrets(kept: Kept, before: dict[str, Toolbox | Server], tenant: Tenant) -> None:
    """A secret value kept for a server that the document moves elsewhere (another entry,
    transport, command, args or URL): the first such value must be typed again."""
    for name, paths in kept.items():
        server = before.get(name)
        if not isinstance(server, Server):
            continue
        toolbox_name, _, server_name = name.partition("/")
        now = Server.objects.select_related("catalog_entry").get(
            toolbox__tenant=tenant, toolbox__name=toolbox_name, name=server_name
        )
        what = moved(destination_of(server), destination_of(now))
        if what:
            where = json_path("toolboxes", toolbox_name, "mcpServers", server_name, paths[0])
            raise ConfigError(f"{where}: {type_again(what)}")


def _servers(document: dict[str, Any]) -> dict[str, tuple[int, dict[str, Any]]]:
    return {
        f"{toolbox_name}/{server_name}": (position, server)
        for toolbox_name, toolbox in document["toolboxes"].items()
        for position, (server_name, server) in enumerate(toolbox["mcpServers"].items())
    }


def raw_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Servers whose way of running a change makes or alters outside the catalog: a raw
    server created, or one (or a catalog one turned raw, or back) changed in how it runs."""
    old, new = _servers(before), _servers(after)
    found = []
    for name, (_, server) in new.items():
        previous = old.get(name, (0, None))[1]
        raw = "catalog" not in server or (previous is not None and "catalog" not in previous)
        if previous is None:
            changed = raw
        else:
            changed = raw and any(server.get(key) != previous.get(key) for key in RAW_CHANGES)
        if changed:
            found.append(name)
    return found


def _objects(tenant: Tenant) -> dict[str, Toolbox | Server]:
    """The tenant's toolboxes (`dev`) and servers (`dev/fs`) by the plan's names."""
    found: dict[str, Toolbox | Server] = {
        toolbox.name: toolbox for toolbox in tenant.toolboxes.all()
    }
    servers = Server.objects.filter(toolbox__tenant=tenant)
    for server in servers.select_related("toolbox", "catalog_entry"):
        found[f"{server.toolbox.name}/{server.name}"] = server
    return found


class RawRefused(Exception):
    def __init__(self, servers: list[str]) -> None:
        super().__init__(", ".join(servers))
        self.servers = servers


class StaleVersion(Exception):
    def __init__(self, current: str) -> None:
        super().__init__(current)
        self.current = current


def apply(
    tenant: Tenant, data: Any, *, if_match: str | None, dry_run: bool, operator: bool
) -> tuple[Plan, str]:
    """Apply `data` as the tenant's whole configuration (all or nothing); with `dry_run`,
    or when nothing would change, nothing is written. Returns the plan and the version
    after. Raises ConfigError (invalid document, or a secret kept for a server it moves
    elsewhere), StaleVersion (If-Match not current) or, for others than operators,
    RawRefused (a raw server made or changed in how it runs; said first)."""
    with transaction.atomic():
        Tenant.objects.select_for_update().filter(pk=tenant.pk).first()  # one writer at a time
        before = export_tenant(tenant)
        current = version(before)
        if if_match is not None and if_match != current:
            raise StaleVersion(current)
        existing = _objects(tenant)
        data, kept = with_kept_values(data, before, _secret_parameters(tenant))
        import_tenant(tenant, data, replace=True)
        after = export_tenant(tenant)
        plan = plan_of(before, after)
        plan.gone = {name: existing[name] for name in plan.deleted}
        refused = [] if operator else raw_changes(before, after)
        if refused:
            raise RawRefused(refused)  # leaving the atomic block undoes the import
        refuse_moved_secrets(kept, existing, tenant)
        if dry_run or plan.empty:
            transaction.set_rollback(True)
            return plan, current
    return plan, version(after)
