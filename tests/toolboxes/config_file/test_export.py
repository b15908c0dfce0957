"""export_config: the spec's format, servers in order, defaults left out."""

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from toolboxes.models import Server, Tenant, Toolbox


def export(*args: str) -> dict:
    out = StringIO()
    call_command("export_config", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def tenant(db):
    tenant = Tenant.objects.create(slug="acme")
    dev = Toolbox.objects.create(tenant=tenant, name="dev", description="Development tools")
    Server.objects.create(
        toolbox=dev, name="search", position=1, transport="streamable-http",
        url="https://example.org/mcp", tool_filters=["search"], idle_timeout=120,
    )  # fmt: skip
    Server.objects.create(
        toolbox=dev, name="filesystem", position=0, command="npx",
        args=["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
        env={"TOKEN": "${FS_TOKEN}"}, cwd="/srv", timeout=5, enabled=False,
    )  # fmt: skip
    return tenant


def test_spec_format_in_order_with_optional_fields_only_when_set(tenant):
    assert export("--tenant", "acme") == {
        "toolboxes": {
            "dev": {
                "description": "Development tools",
                "mcpServers": {
                    "filesystem": {
                        "command": "npx",
                        "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
                        "env": {"TOKEN": "${FS_TOKEN}"},
                        "cwd": "/srv",
                        "toolFilters": ["*"],
                        "timeout": 5,
                        "enabled": False,
                    },
                    "search": {
                        "type": "streamable-http",
                        "url": "https://example.org/mcp",
                        "headers": {},
                        "toolFilters": ["search"],
                        "idleTimeout": 120,
                    },
                },
            }
        }
    }


def test_key_order_of_the_servers_is_the_configured_order(tenant, tmp_path):
    target = tmp_path / "out.json"
    call_command("export_config", "--tenant", "acme", "--output", str(target))
    servers = json.loads(target.read_text())["toolboxes"]["dev"]["mcpServers"]
    assert list(servers) == ["filesystem", "search"]
    assert target.read_text().endswith("}\n")


def test_all_tenants(tenant):
    Tenant.objects.create(slug="beta")
    data = export("--all")
    assert list(data["tenants"]) == ["acme", "beta"]
    assert data["tenants"]["beta"] == {"toolboxes": {}}


def test_without_tenant_lists_the_tenants(tenant):
    with pytest.raises(
        CommandError, match=re.escape("--tenant <slug>, or use --all. Tenants: acme")
    ):
        export()


def test_unknown_tenant(tenant):
    with pytest.raises(CommandError, match=re.escape("Unknown tenant 'nope'. Tenants: acme")):
        export("--tenant", "nope")
