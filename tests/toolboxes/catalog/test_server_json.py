"""import_catalog / export_catalog on MCP Registry server.json files, the default catalog,
and catalog-made servers in export_config / import_config."""

import json
import shutil
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from toolboxes.catalog.entries import load_default_catalog
from toolboxes.config_file import ConfigError, dumps, export_tenant, import_tenant
from toolboxes.launch import launch_of
from toolboxes.models import CatalogEntry, CatalogParameter, Server, Tenant, Toolbox

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

NPM = {
    "$schema": SCHEMA,
    "name": "io.example/weather",
    "title": "Weather",
    "description": "Forecasts",
    "version": "1.0.2",
    "packages": [
        {
            "registryType": "oci",
            "identifier": "docker.io/example/weather:1.0.2",
            "transport": {"type": "stdio"},
        },
        {
            "registryType": "npm",
            "registryBaseUrl": "https://registry.npmjs.org",
            "identifier": "@example/weather",
            "version": "1.0.2",
            "runtimeHint": "npx",
            "transport": {"type": "stdio"},
            "runtimeArguments": [
                {"type": "named", "name": "--node-options", "value": "--max-old-space-size=64"}
            ],
            "packageArguments": [
                {"type": "positional", "value": "serve"},
                {
                    "type": "named",
                    "name": "--units",
                    "description": "Units",
                    "default": "metric",
                    "choices": ["metric", "imperial"],
                },
                {"type": "positional", "valueHint": "city", "isRequired": True},
                {
                    "type": "named",
                    "name": "--region",
                    "value": "{region}-1",
                    "variables": {"region": {"description": "Region", "default": "eu"}},
                },
            ],
            "environmentVariables": [
                {
                    "name": "WEATHER_API_KEY",
                    "description": "API key",
                    "isRequired": True,
                    "isSecret": True,
                },
                {"name": "LOG_LEVEL", "default": "info"},
            ],
        },
    ],
}

PYPI = {
    "$schema": SCHEMA,
    "name": "io.example/clock",
    "description": "Time",
    "version": "2026.10.19",
    "packages": [
        {
            "registryType": "pypi",
            "identifier": "mcp-server-time",
            "version": "2026.10.19",
            "transport": {"type": "stdio"},
            "packageArguments": [{"type": "named", "name": "--local-timezone"}],
        }
    ],
}

REMOTE = {
    "$schema": SCHEMA,
    "name": "io.example/hosted",
    "description": "Hosted",
    "version": "2.0.0",
    "remotes": [
        {
            "type": "streamable-http",
            "url": "https://{tenant}.mcp.example.com/mcp",
            "variables": {"tenant": {"description": "Your tenant", "isRequired": True}},
            "headers": [
                {
                    "name": "X-API-Key",
                    "description": "Key",
                    "isRequired": True,
                    "isSecret": True,
                }
            ],
        }
    ],
}

OCI_ONLY = {
    "$schema": SCHEMA,
    "name": "io.example/boxed",
    "description": "Only a container",
    "version": "3.1.0",
    "packages": [
        {
            "registryType": "oci",
            "identifier": "docker.io/example/boxed:3.1.0",
            "transport": {"type": "stdio"},
        }
    ],
}


def write(tmp_path, name, data):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return str(path)


def import_files(*paths):
    out = StringIO()
    call_command("import_catalog", *paths, stdout=out)
    return out.getvalue()


def params(entry):
    return {p.name: (p.required, p.secret, p.default, p.choices) for p in entry.parameters.all()}


def test_npm_package(db, tmp_path):
    out = import_files(write(tmp_path, "weather", NPM))
    assert out.strip() == "Imported 1 catalog entries: io.example/weather."
    entry = CatalogEntry.objects.get(name="io.example/weather")
    assert (entry.title, entry.transport, entry.command) == ("Weather", "stdio", "npx")
    assert entry.args == [
        "-y",
        "--node-options=--max-old-space-size=64",
        "@example/weather@1.0.2",
        "serve",
        "--units={{units}}",
        "{{city}}",
        "--region={{region}}-1",
    ]
    assert entry.env == {"WEATHER_API_KEY": "{{WEATHER_API_KEY}}", "LOG_LEVEL": "{{LOG_LEVEL}}"}
    assert params(entry) == {
        "units": (False, False, "metric", ["metric", "imperial"]),
        "city": (True, False, "", []),
        "region": (False, False, "eu", []),
        "WEATHER_API_KEY": (True, True, "", []),
        "LOG_LEVEL": (False, False, "info", []),
    }


def test_pypi_package_runs_with_uvx_or_this_python(db, tmp_path):
    import_files(write(tmp_path, "clock", PYPI))
    entry = CatalogEntry.objects.get(name="io.example/clock")
    if shutil.which("uvx"):
        assert (entry.command, entry.args[0]) == ("uvx", "mcp-server-time==2026.10.19")
    else:
        assert (entry.command, entry.args[:2]) == (sys.executable, ["-m", "mcp_server_time"])
    assert entry.args[-1] == "--local-timezone={{local-timezone}}"


def test_remote_only(db, tmp_path):
    import_files(write(tmp_path, "hosted", REMOTE))
    entry = CatalogEntry.objects.get(name="io.example/hosted")
    assert (entry.transport, entry.url) == (
        "streamable-http",
        "https://{{tenant}}.mcp.example.com/mcp",
    )
    assert entry.headers == {"X-API-Key": "{{X-API-Key}}"}
    assert params(entry) == {
        "tenant": (True, False, "", []),
        "X-API-Key": (True, True, "", []),
    }


def test_oci_only_is_refused_by_json_path(db, tmp_path):
    path = write(tmp_path, "boxed", OCI_ONLY)
    with pytest.raises(CommandError) as error:
        import_files(path)
    assert str(error.value) == (
        f"Nothing imported:\n{path}: packages[0].registryType: 'oci': no package can run "
        "here (supported: npm and pypi over stdio) and no streamable-http or sse remote"
    )
    assert not CatalogEntry.objects.exists()


def test_several_files_import_all_or_none(db, tmp_path):
    good = [write(tmp_path, "weather", NPM), write(tmp_path, "hosted", REMOTE)]
    bad = write(tmp_path, "boxed", OCI_ONLY)
    with pytest.raises(CommandError):
        import_files(*good, bad)
    assert not CatalogEntry.objects.exists()
    assert "Imported 2 catalog entries" in import_files(*good)
    assert CatalogEntry.objects.count() == 2


def test_a_bad_file_later_in_the_save_rolls_back_the_earlier_ones(db, tmp_path):
    invalid_url = {**REMOTE, "name": "io.example/broken"}
    invalid_url["remotes"] = [{"type": "sse", "url": "ftp://nowhere"}]
    with pytest.raises(CommandError) as error:
        import_files(write(tmp_path, "weather", NPM), write(tmp_path, "broken", invalid_url))
    assert "io.example/broken.url: URL must start with http:// or https://" in str(error.value)
    assert not CatalogEntry.objects.exists()


def test_a_reimport_updates_the_entry_and_its_servers_follow(db, tmp_path):
    import_files(write(tmp_path, "weather", NPM))
    entry = CatalogEntry.objects.get()
    toolbox = Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme"), name="dev", description="d"
    )
    server = Server(
        toolbox=toolbox,
        name="w",
        catalog_entry=entry,
        parameters={"city": "Oslo", "WEATHER_API_KEY": "k"},
    )
    server.full_clean()
    server.save()
    newer = json.loads(json.dumps(NPM))
    newer["packages"][1]["version"] = "1.1.0"
    import_files(write(tmp_path, "weather", newer))
    assert "@example/weather@1.1.0" in launch_of(Server.objects.get(pk=server.pk)).args


def test_export_catalog_reads_back_exactly(db, tmp_path):
    import_files(write(tmp_path, "weather", NPM), write(tmp_path, "hosted", REMOTE))
    first = StringIO()
    call_command("export_catalog", stdout=first)
    exported = tmp_path / "catalog.json"
    exported.write_text(first.getvalue())
    CatalogEntry.objects.all().delete()
    import_files(str(exported))
    second = StringIO()
    call_command("export_catalog", stdout=second)
    assert second.getvalue() == first.getvalue()
    assert json.loads(first.getvalue())["catalog"]["io.example/hosted"]["parameters"][1] == {
        "name": "X-API-Key",
        "description": "Key",
        "required": True,
        "default": "",
        "choices": [],
        "secret": True,
    }


def test_the_default_catalog_loads_once_and_keeps_operator_edits(db):
    names = [entry.name for entry in load_default_catalog()]
    assert names == [
        "io.modelcontextprotocol/time",
        "io.modelcontextprotocol/git",
        "io.modelcontextprotocol/memory",
        "io.modelcontextprotocol/filesystem",
        "io.modelcontextprotocol/everything",
    ]
    time = CatalogEntry.objects.get(name="io.modelcontextprotocol/time")
    time.description = "edited by the operator"
    time.save()
    assert load_default_catalog() == []
    time.refresh_from_db()
    assert time.description == "edited by the operator"
    memory = CatalogEntry.objects.get(name="io.modelcontextprotocol/memory")
    assert memory.args == ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]


# export_config / import_config


@pytest.fixture
def catalog_tenant(db):
    entry = CatalogEntry.objects.create(
        name="io.example/tool", command="tool", args=["--dir={{dir}}"], env={"K": "{{key}}"}
    )
    CatalogParameter.objects.create(entry=entry, name="dir", required=True)
    CatalogParameter.objects.create(entry=entry, name="key", secret=True)
    tenant = Tenant.objects.create(slug="acme")
    toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="d")
    server = Server(
        toolbox=toolbox,
        name="tool",
        catalog_entry=entry,
        parameters={"dir": "/srv", "key": "s3cr3t"},
        tool_filters=["read"],
        timeout=9,
    )
    server.full_clean()
    server.save()
    return tenant


def test_config_export_names_the_entry_and_parameters(catalog_tenant):
    assert export_tenant(catalog_tenant)["toolboxes"]["dev"]["mcpServers"]["tool"] == {
        "catalog": "io.example/tool",
        "parameters": {"dir": "/srv", "key": "s3cr3t"},
        "toolFilters": ["read"],
        "timeout": 9,
    }


def test_config_round_trip_is_exact(catalog_tenant):
    text = dumps(export_tenant(catalog_tenant))
    other = Tenant.objects.create(slug="other")
    import_tenant(other, json.loads(text))
    server = Server.objects.get(toolbox__tenant=other)
    assert server.secret_parameters == {"key": "s3cr3t"}
    assert server.parameters == {"dir": "/srv"}
    assert dumps(export_tenant(other)) == text


@pytest.mark.parametrize(
    ("server", "message"),
    [
        (
            {"catalog": "io.example/none"},
            "toolboxes.dev.mcpServers.tool.catalog: no catalog entry 'io.example/none'",
        ),
        (
            {"catalog": "io.example/tool", "parameters": {"key": "k"}},
            "toolboxes.dev.mcpServers.tool.parameters: Parameter 'dir' is required.",
        ),
        (
            {"catalog": "io.example/tool", "command": "sh"},
            "toolboxes.dev.mcpServers.tool.command: is not a known field",
        ),
    ],
)
def test_config_import_errors_name_the_path(catalog_tenant, server, message):
    data = {"toolboxes": {"dev": {"description": "d", "mcpServers": {"tool": server}}}}
    with pytest.raises(ConfigError) as error:
        import_tenant(catalog_tenant, data)
    assert str(error.value) == message


def test_key_rotation_reencrypts_catalog_secrets(catalog_tenant, settings):
    from cryptography.fernet import Fernet

    entry = CatalogEntry.objects.get()
    entry.env = {"K": "{{key}}", "FIXED": "operator-secret"}
    entry.save()
    new_key = Fernet.generate_key().decode()
    settings.ENCRYPTION_KEYS = [new_key, *settings.ENCRYPTION_KEYS]
    call_command("rotate_encryption_keys", stdout=StringIO())
    settings.ENCRYPTION_KEYS = [new_key]
    server = Server.objects.get()
    assert server.secret_parameters == {"key": "s3cr3t"}
    assert CatalogEntry.objects.get().env["FIXED"] == "operator-secret"
