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


def test_a_filter_naming_a_tool_the_server_does_not_offer_is_warned_about(tenant):
    """As check_config reports it, from the server's last connect (never connected: not
    known, so not said); the file is written all the same."""
    Server.objects.filter(name="search").update(
        last_check_ok=True, last_check_tools=[{"name": "find"}], tool_filters=["search", "find"]
    )
    warning = (
        "Warning: server acme/dev/search: The filter names tools the server does not offer: "
        "search.\n"
    )
    for args in (["--tenant", "acme"], ["--tenant", "acme", "--toolbox", "dev"], ["--all"]):
        out, err = StringIO(), StringIO()
        call_command("export_config", *args, stdout=out, stderr=err)
        assert err.getvalue() == warning, args
        assert '"search",\n' in out.getvalue()
    # The desktop form holds no filters (it says so): nothing to warn about.
    err = StringIO()
    call_command(
        "export_config", "--tenant", "acme", "--toolbox", "dev", "--format", "desktop",
        stdout=StringIO(), stderr=err,
    )  # fmt: skip
    assert "does not offer" not in err.getvalue()
