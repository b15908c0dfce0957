"""Desktop files both ways: one toolbox written as a plain `{"mcpServers": ...}` file, and
desktop files (Claude Desktop's, VS Code's `servers`, the `"type": "http"` spelling) read
back; a file whose top-level key is wrong says which keys are accepted."""

import io
import json
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from toolboxes.models import CatalogEntry, CatalogParameter, Server

ACCEPTED_DESKTOP = (
    'accepted top-level keys: "mcpServers" (Claude Desktop, Cursor, Windsurf, Gemini CLI) '
    'or "servers" (VS Code), or "toolboxes" (export_config\'s format)'
)


@pytest.fixture
def tenant(make_tenant):
    return make_tenant("acme")


@pytest.fixture
def toolbox(tenant, make_toolbox, make_server):
    box = make_toolbox(tenant, "dev")
    make_server(box, "fs", command="npx", args=["-y", "server-fs", "/srv"], env={"TOKEN": "t1"})
    make_server(
        box,
        "search",
        position=1,
        transport="streamable-http",
        command="",
        url="https://example.org/mcp",
        headers={"Authorization": "Bearer s3cret"},
        tool_filters=["search"],
    )
    make_server(
        box, "legacy", position=2, transport="sse", command="", url="https://example.org/sse"
    )
    make_server(box, "sandboxed", position=3, command="uvx", cwd="/srv", timeout=5)
    make_server(box, "off", position=4, command="x", enabled=False)
    return box


def export(*args: str) -> tuple[dict, str]:
    out, err = StringIO(), StringIO()
    call_command("export_config", "--tenant", "acme", *args, stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def import_data(data, *args: str) -> str:
    out = StringIO()
    saved, sys.stdin = sys.stdin, io.StringIO(json.dumps(data))
    try:
        call_command("import_config", "-", "--tenant", "acme", *args, stdout=out)
    finally:
        sys.stdin = saved
    return out.getvalue()


def test_one_toolbox_as_a_desktop_file(toolbox):
    data, notes = export("--toolbox", "dev", "--format", "desktop")
    assert data == {
        "mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "server-fs", "/srv"], "env": {"TOKEN": "t1"}},
            "search": {
                "type": "http",
                "url": "https://example.org/mcp",
                "headers": {"Authorization": "Bearer s3cret"},  # decrypted, as export_config
            },
            "legacy": {"type": "sse", "url": "https://example.org/sse", "headers": {}},
            "sandboxed": {"command": "uvx", "args": [], "env": {}},
        }
    }
    assert notes.splitlines() == [
        "Server 'search': a desktop file cannot hold toolFilters; a desktop client runs it "
        "without them.",
        "Server 'sandboxed': a desktop file cannot hold cwd, timeout; a desktop client runs it "
        "without them.",
        "Left out server 'off': it is disabled.",
    ]


def test_a_catalog_server_is_written_as_what_it_runs(tenant, make_toolbox):
    entry = CatalogEntry.objects.create(
        name="weather", command="uvx", args=["weather-mcp", "--units={{units}}"]
    )
    CatalogParameter.objects.create(entry=entry, name="units", default="metric")
    box = make_toolbox(tenant, "dev")
    server = Server(toolbox=box, name="weather", catalog_entry=entry, parameters={"units": "si"})
    server.save()
    data, _ = export("--toolbox", "dev", "--format", "desktop")
    assert data == {
        "mcpServers": {
            "weather": {"command": "uvx", "args": ["weather-mcp", "--units=si"], "env": {}}
        }
    }


def test_the_desktop_file_reads_back_into_a_toolbox(toolbox, tmp_path):
    path = tmp_path / "desktop.json"
    call_command(
        "export_config", "--tenant", "acme", "--toolbox", "dev", "--format", "desktop",
        "--output", str(path), stderr=StringIO(),
    )  # fmt: skip
    assert path.stat().st_mode & 0o777 == 0o600  # it holds decrypted secrets
    out = StringIO()
    call_command("import_config", str(path), "--tenant", "acme", "--toolbox", "copy", stdout=out)
    assert out.getvalue() == (
        "Imported into tenant 'acme': created copy, copy/fs, copy/search, copy/legacy, "
        "copy/sandboxed.\n"
    )
    again, _ = export("--toolbox", "copy", "--format", "desktop")
    assert again == json.loads(path.read_text())


def test_one_toolbox_in_the_export_format(toolbox, make_toolbox, tenant):
    make_toolbox(tenant, "prod")
    data, _ = export("--toolbox", "dev")
    full, _ = export()
    assert data == {"toolboxes": {"dev": full["toolboxes"]["dev"]}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--format", "desktop"],
            "--format desktop writes one toolbox: name it with --toolbox NAME. "
            "Toolboxes of tenant 'acme': dev",
        ),
        (["--toolbox", "nope"], "Tenant 'acme' has no toolbox 'nope'. Toolboxes: dev"),
    ],
)
def test_export_errors(toolbox, args, message):
    with pytest.raises(CommandError) as error:
        export(*args)
    assert str(error.value) == message


def test_all_tenants_cannot_be_one_desktop_file(toolbox):
    with pytest.raises(CommandError) as error:
        call_command("export_config", "--all", "--format", "desktop", stdout=StringIO())
    assert str(error.value) == (
        "--all writes every tenant: --toolbox and --format desktop need one tenant "
        "(--tenant <slug>)."
    )


def test_vs_code_servers_and_the_http_spelling(tenant):
    vscode = {
        "inputs": [{"type": "promptString", "id": "token", "password": True}],
        "servers": {
            "memory": {"type": "stdio", "command": "npx", "args": ["-y", "server-memory"]},
            "github": {
                "type": "http",
                "url": "https://api.example.com/mcp/",
                "headers": {"Authorization": "Bearer gh"},
            },
        },
    }
    assert import_data(vscode, "--toolbox", "code") == (
        "Imported into tenant 'acme': created code, code/memory, code/github.\n"
    )
    server = Server.objects.get(name="github")
    assert (server.transport, server.url, server.headers) == (
        "streamable-http",
        "https://api.example.com/mcp/",
        {"Authorization": "Bearer gh"},
    )
    assert Server.objects.get(name="memory").args == ["-y", "server-memory"]


def test_windsurf_and_gemini_url_spellings(tenant):
    desktop = {
        "mcpServers": {
            "wind": {"serverUrl": "https://wind.example.com/mcp"},
            "gem": {"httpUrl": "https://gem.example.com/mcp", "headers": {"X-Key": "k"}},
        }
    }
    import_data(desktop, "--toolbox", "mixed")
    urls = {s.name: (s.transport, s.url) for s in Server.objects.all()}
    assert urls == {
        "wind": ("streamable-http", "https://wind.example.com/mcp"),
        "gem": ("streamable-http", "https://gem.example.com/mcp"),
    }


@pytest.mark.parametrize(
    ("data", "args", "message"),
    [
        (
            {"mcp_servers": {}, "theme": "dark"},
            ["--toolbox", "desk"],
            f'top level: no servers (this file has "mcp_servers", "theme"); {ACCEPTED_DESKTOP}',
        ),
        (
            {},
            ["--toolbox", "desk"],
            f"top level: no servers (this file is empty); {ACCEPTED_DESKTOP}",
        ),
        (
            {"mcpServers": {}, "servers": {}},
            ["--toolbox", "desk"],
            'top level: both "mcpServers" and "servers"; keep one',
        ),
        ({"servers": []}, ["--toolbox", "desk"], "servers: must be an object"),
        (
            {"servers": {"x": {"command": "uvx", "envFile": ".env"}}},
            ["--toolbox", "desk"],
            "servers.x.envFile: is not a known field",
        ),
        (
            {"mcpServers": {"fs": {"command": "npx"}}},
            [],
            'toolboxes: is required (this file has "mcpServers"); accepted top-level keys: '
            '"toolboxes" (export_config\'s format), or with --toolbox NAME "mcpServers" '
            '(Claude Desktop, Cursor, Windsurf, Gemini CLI) or "servers" (VS Code)',
        ),
    ],
)
def test_a_wrong_top_level_says_what_is_accepted(tenant, data, args, message):
    with pytest.raises(CommandError) as error:
        import_data(data, *args)
    assert str(error.value) == f"Nothing imported: {message}"
    assert not Server.objects.exists()
