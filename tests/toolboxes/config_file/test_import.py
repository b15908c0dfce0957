"""import_config: all or nothing, errors that name the JSON path and field."""

import io
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from toolboxes.models import Server, Tenant

SPEC_EXAMPLE = {
    "toolboxes": {
        "dev": {
            "description": "Development environment tools",
            "mcpServers": {
                "filesystem": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
                    "env": {},
                    "toolFilters": ["*"],
                },
                "search": {
                    "type": "streamable-http",
                    "url": "https://example.org/mcp",
                    "headers": {},
                    "toolFilters": ["search"],
                },
            },
        }
    }
}


@pytest.fixture
def tenant(db):
    return Tenant.objects.create(slug="acme")


def export(slug: str = "acme") -> dict:
    out = StringIO()
    call_command("export_config", "--tenant", slug, stdout=out)
    return json.loads(out.getvalue())


def import_data(data, *args: str, tmp_path=None, stderr: StringIO | None = None) -> str:
    text = data if isinstance(data, str) else json.dumps(data)
    out = StringIO()
    stdin = io.StringIO(text)
    import sys

    saved, sys.stdin = sys.stdin, stdin
    try:
        call_command("import_config", "-", *args, stdout=out, stderr=stderr or StringIO())
    finally:
        sys.stdin = saved
    return out.getvalue()


def test_spec_example_imports_and_exports_back_unchanged(tenant):
    output = import_data(SPEC_EXAMPLE, "--tenant", "acme")
    assert output == "Imported into tenant 'acme': created dev, dev/filesystem, dev/search.\n"
    assert export() == SPEC_EXAMPLE


def test_reads_a_file(tenant, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SPEC_EXAMPLE))
    call_command("import_config", str(path), "--tenant", "acme", stdout=StringIO())
    assert export() == SPEC_EXAMPLE


def with_server(server: dict) -> dict:
    return {"toolboxes": {"dev": {"description": "d", "mcpServers": {"fs": server}}}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "Invalid JSON: Expecting property name enclosed in double quotes (line 1"),
        ('{"toolboxes": {"dev": {}, "dev": {}}}', "Invalid JSON: duplicate key 'dev'"),
        ({}, "toolboxes: is required"),
        ([], "top level: must be an object"),
        ({"toolboxes": [], "x": 1}, "toolboxes: must be an object"),
        ({"toolbox_name": "dev", "toolboxes": {}}, "toolbox_name: is not a known field"),
        ({"toolboxes": {"dev": {"mcpServers": {}}}}, "toolboxes.dev.description: is required"),
        (
            {"toolboxes": {"dev": {"description": " ", "mcpServers": {}}}},
            "toolboxes.dev.description: must not be empty",
        ),
        (
            {"toolboxes": {"bad name": {"description": "d", "mcpServers": {}}}},
            "toolboxes.bad name: invalid name",
        ),
        (
            with_server({"command": "npx", "args": "-y"}),
            "toolboxes.dev.mcpServers.fs.args: must be a list",
        ),
        (
            with_server({"command": "npx", "args": ["-y", 3]}),
            "toolboxes.dev.mcpServers.fs.args[1]: must be a string",
        ),
        (
            with_server({"command": "npx", "env": {"A": 1}}),
            "toolboxes.dev.mcpServers.fs.env.A: must be a string",
        ),
        (
            with_server({"command": "npx", "env": {"1A": "x"}}),
            "toolboxes.dev.mcpServers.fs.env: '1A' is not a valid environment variable name",
        ),
        (
            with_server({"command": "npx", "tool_name": "x"}),
            "toolboxes.dev.mcpServers.fs.tool_name: is not a known field",
        ),
        (with_server({"args": []}), "toolboxes.dev.mcpServers.fs.command: is required"),
        (
            with_server({"command": " "}),
            "toolboxes.dev.mcpServers.fs.command: A stdio server needs a command.",
        ),
        (
            with_server({"type": "sse", "headers": {}}),
            "toolboxes.dev.mcpServers.fs.url: is required",
        ),
        (
            with_server({"type": "streamable-http", "url": "ftp://x"}),
            "toolboxes.dev.mcpServers.fs.url: URL must start with http:// or https://",
        ),
        (
            with_server({"type": "websocket", "url": "ws://x"}),
            "toolboxes.dev.mcpServers.fs.type: must be one of 'stdio'",
        ),
        (
            with_server({"command": "x", "toolFilters": [""]}),
            "toolboxes.dev.mcpServers.fs.toolFilters: item 0 must not be empty",
        ),
        (
            with_server({"command": "x", "timeout": 0}),
            "toolboxes.dev.mcpServers.fs.timeout: must be at least 1",
        ),
        (
            with_server({"command": "x", "idleTimeout": 0}),
            "toolboxes.dev.mcpServers.fs.idleTimeout: must be at least 1",
        ),
        (
            with_server({"command": "x", "enabled": "yes"}),
            "toolboxes.dev.mcpServers.fs.enabled: must be true or false",
        ),
        (
            {"toolboxes": {"dev": {"description": "d", "mcpServers": {"fs": []}}}},
            "toolboxes.dev.mcpServers.fs: must be an object",
        ),
    ],
)
def test_bad_files_change_nothing_and_name_the_path(tenant, data, message):
    import_data(SPEC_EXAMPLE, "--tenant", "acme")
    before = export()
    with pytest.raises(CommandError) as error:
        import_data(data, "--tenant", "acme", "--replace")
    assert str(error.value).startswith("Nothing imported: ")
    assert message in str(error.value)
    assert export() == before


def test_a_late_error_rolls_back_earlier_toolboxes(tenant):
    data = {
        "toolboxes": {
            "first": {"description": "d", "mcpServers": {"ok": {"command": "x"}}},
            "second": {"description": "d", "mcpServers": {"bad": {"command": ""}}},
        }
    }
    with pytest.raises(CommandError):
        import_data(data, "--tenant", "acme")
    assert export() == {"toolboxes": {}}


def test_unknown_tenant_names_the_option_that_creates_it(tenant):
    with pytest.raises(CommandError) as refused:
        import_data(SPEC_EXAMPLE, "--tenant", "nope")
    assert str(refused.value) == (
        "Unknown tenant 'nope'. Tenants: acme. Add --create-tenant to create it with the import."
    )
    assert not Tenant.objects.filter(slug="nope").exists()


def test_create_tenant_creates_it_with_the_import_all_or_nothing(tenant):
    bad = {"toolboxes": {"dev": {"mcpServers": {"x": {"command": ""}}}}}
    with pytest.raises(CommandError, match=r"^Nothing imported: "):
        import_data(bad, "--tenant", "new", "--create-tenant")
    assert not Tenant.objects.filter(slug="new").exists()  # gone with the failed import
    with pytest.raises(CommandError) as refused:
        import_data(SPEC_EXAMPLE, "--tenant", "Not a slug!", "--create-tenant")
    assert str(refused.value).startswith("slug: ")
    output = import_data(SPEC_EXAMPLE, "--tenant", "new", "--create-tenant")
    assert output == (
        "Created tenant 'new'.\n"
        "Imported into tenant 'new': created dev, dev/filesystem, dev/search.\n"
    )
    assert export("new") == SPEC_EXAMPLE
    # An existing tenant is imported into, as without the option.
    output = import_data(SPEC_EXAMPLE, "--tenant", "new", "--create-tenant")
    assert output == "No change.\n"


def test_a_filter_naming_a_tool_the_server_does_not_offer_is_warned_about(tenant):
    """As check_config reports it, from the server's last connect; a server never
    connected is named, with the command that compares."""
    errors = StringIO()
    import_data(SPEC_EXAMPLE, "--tenant", "acme", stderr=errors)
    assert errors.getvalue() == (
        "Not checked yet, so their tool filters are not compared with the tools they offer: "
        "dev/search. Run: manage.py check_config --tenant acme\n"
    )
    Server.objects.filter(name="search").update(
        last_check_ok=True, last_check_tools=[{"name": "find"}, {"name": "fetch"}]
    )
    changed = json.loads(json.dumps(SPEC_EXAMPLE))
    changed["toolboxes"]["dev"]["mcpServers"]["search"]["toolFilters"] = ["search", "find", "x"]
    errors = StringIO()
    import_data(changed, "--tenant", "acme", stderr=errors)
    assert errors.getvalue() == (
        "Warning: server acme/dev/search: The filter names tools the server does not offer: "
        "search, x.\n"
    )
    errors = StringIO()
    desktop = {"mcpServers": {"search": {"url": "https://example.org/mcp"}}}
    import_data(desktop, "--tenant", "acme", "--toolbox", "dev", stderr=errors)
    assert errors.getvalue() == ""  # no filter: all of its tools


def test_update_by_name_keeps_unlisted_servers_after_the_listed(tenant):
    import_data(SPEC_EXAMPLE, "--tenant", "acme")
    update = {
        "toolboxes": {
            "dev": {
                "description": "Updated",
                "mcpServers": {
                    "new": {"command": "uvx", "args": [], "env": {}, "toolFilters": ["*"]},
                    "search": {"type": "sse", "url": "https://example.org/sse"},
                },
            },
            "prod": {"description": "Production", "mcpServers": {}},
        }
    }
    import_data(update, "--tenant", "acme")
    data = export()
    assert data["toolboxes"]["dev"]["description"] == "Updated"
    assert list(data["toolboxes"]["dev"]["mcpServers"]) == ["new", "search", "filesystem"]
    assert data["toolboxes"]["dev"]["mcpServers"]["search"]["type"] == "sse"
    assert list(data["toolboxes"]) == ["dev", "prod"]


def test_replace_makes_the_configuration_the_files(tenant):
    from toolboxes.models import ApiKey

    import_data(SPEC_EXAMPLE, "--tenant", "acme")
    dev = tenant.toolboxes.get(name="dev")
    api_key, _ = ApiKey.issue(tenant, toolboxes=[dev])
    replacement = {"toolboxes": {"dev": {"description": "Only", "mcpServers": {}}}}
    import_data(replacement, "--tenant", "acme", "--replace")
    assert export() == replacement
    # The toolbox was updated in place: the key limited to it still is.
    assert list(api_key.toolboxes.all()) == [tenant.toolboxes.get(name="dev")]


def test_desktop_file_into_a_toolbox(tenant):
    desktop = {
        "mcpServers": {
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
            "remote": {"type": "http", "url": "https://example.org/mcp"},
            "old": {"command": "x", "disabled": True},
        },
        "globalShortcut": "Ctrl+Space",
    }
    output = import_data(desktop, "--tenant", "acme", "--toolbox", "desk")
    assert output == (
        "Imported into tenant 'acme': created desk, desk/time, desk/remote, desk/old.\n"
    )
    servers = export()["toolboxes"]["desk"]["mcpServers"]
    assert servers["time"] == {
        "command": "uvx",
        "args": ["mcp-server-time"],
        "env": {},
        "toolFilters": ["*"],
    }
    assert servers["remote"]["type"] == "streamable-http"
    assert servers["old"]["enabled"] is False


def test_export_of_all_tenants_is_refused_with_a_hint(tenant):
    with pytest.raises(CommandError, match="import one tenant's part"):
        import_data({"tenants": {"acme": SPEC_EXAMPLE}}, "--tenant", "acme")
