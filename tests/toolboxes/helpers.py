"""What the admin tests share: the server form's POSTs (an operator's raw server, a server
made from a catalog entry, an existing server changed, servers inline on a toolbox's page)
and servers made as the admin makes them (validated, then saved)."""

from __future__ import annotations

import json
import sys
from typing import Any

from kernel.masking import MASK
from toolboxes.models import CatalogEntry, Server, Tenant, Toolbox

# A stdio server's fields as its form posts them, nothing filled in.
STDIO_FORM = {
    "position": "0",
    "transport": "stdio",
    "enabled": "on",
    "command": "",
    "cwd": "",
    "args": "[]",
    "env": "{}",
    "url": "",
    "headers": "{}",
    "tool_filters": '["*"]',
    "timeout": "60",
}


def raw_server_post(toolbox: Toolbox, **fields: Any) -> dict[str, Any]:
    """An operator's server added on its own page, a stdio command of its own."""
    data: dict[str, Any] = {
        **STDIO_FORM,
        "toolbox": toolbox.pk,
        "name": "raw",
        "command": "/opt/tool",
        "mounts": "[]",
        "network": "on",
        "catalog_entry": "",
    }
    return data | fields


def catalog_server_post(toolbox: Toolbox, entry: CatalogEntry, **fields: Any) -> dict[str, Any]:
    """A server made from a catalog entry (a tenant admin's form)."""
    data: dict[str, Any] = {
        "toolbox": toolbox.pk,
        "name": "weather",
        "position": "0",
        "enabled": "on",
        "catalog_entry": entry.pk,
        "tool_filters": '["*"]',
        "timeout": "60",
        "idle_timeout": "",
    }
    return data | fields


def server_change_post(server: Server, **fields: Any) -> dict[str, Any]:
    """An existing server's page posted back as shown: stored secrets as the mask."""
    data: dict[str, Any] = {
        "toolbox": server.toolbox.pk,
        "name": server.name,
        "position": server.position,
        "transport": server.transport,
        "enabled": "on",
        "command": server.command,
        "cwd": "",
        "args": json.dumps(server.args),
        "env": json.dumps({name: MASK for name in server.env}),
        "url": server.url,
        "headers": json.dumps({name: MASK for name in server.headers}),
        "tool_filters": json.dumps(server.tool_filters),
        "timeout": server.timeout,
        "mounts": "[]",
        "network": "on",
    }
    return data | fields


def inline_server_form(index: int, **fields: Any) -> dict[str, Any]:
    """One server inline on a toolbox's page (`servers-<index>-...`)."""
    data = {"name": "", **STDIO_FORM, **fields}
    return {f"servers-{index}-{name}": value for name, value in data.items()}


def toolbox_post(
    tenant: Tenant, servers: list[dict[str, Any]], name: str = "dev", initial: int = 0
) -> dict[str, Any]:
    """A toolbox's page with its servers inline."""
    data: dict[str, Any] = {
        "tenant": tenant.pk,
        "name": name,
        "description": "Development tools",
        "servers-TOTAL_FORMS": str(len(servers)),
        "servers-INITIAL_FORMS": str(initial),
        "servers-MIN_NUM_FORMS": "0",
        "servers-MAX_NUM_FORMS": "1000",
    }
    for form in servers:
        data.update(form)
    return data


def make_server(toolbox: Toolbox, name: str, args: list[str], **fields: Any) -> Server:
    """A stdio server of this Python, validated and saved as the admin would."""
    server = Server(toolbox=toolbox, name=name, command=sys.executable, args=args, **fields)
    server.full_clean()
    server.save()
    return server
