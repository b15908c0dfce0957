"""import_config says what it changed (the plan `PUT .../config` answers), "No change."
when nothing did, and with --dry-run what it would change, writing nothing."""

from __future__ import annotations

import io
import json
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from toolboxes.config_file import export_tenant
from toolboxes.models import Server, Tenant

DOCUMENT = {
    "toolboxes": {
        "dev": {
            "description": "Development",
            "mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server-fs"]},
                "git": {"command": "uvx", "args": ["mcp-server-git"]},
                "time": {"command": "uvx", "args": ["mcp-server-time"]},
            },
        },
        "ops": {"description": "Operations", "mcpServers": {}},
    }
}


def import_config(data: dict, *args: str) -> str:
    out, saved = StringIO(), sys.stdin
    sys.stdin = io.StringIO(json.dumps(data))
    try:
        call_command("import_config", "-", "--tenant", "acme", *args, stdout=out)
    finally:
        sys.stdin = saved
    return out.getvalue()


@pytest.fixture
def tenant(db) -> Tenant:
    tenant = Tenant.objects.create(slug="acme")
    import_config(DOCUMENT)
    return tenant


def changed() -> dict:
    document = json.loads(json.dumps(DOCUMENT))
    servers = document["toolboxes"]["dev"]["mcpServers"]
    del servers["fs"]  # the others' indexes shift: no position change for them
    servers["time"]["args"] = ["mcp-server-time", "--local-timezone=UTC"]
    servers["memory"] = {"command": "npx", "args": ["-y", "server-memory"]}
    del document["toolboxes"]["ops"]
    document["toolboxes"]["docs"] = {"description": "Docs", "mcpServers": {}}
    return document


def test_the_same_configuration_again_is_no_change(tenant):
    assert import_config(DOCUMENT, "--replace") == "No change.\n"
    assert import_config(DOCUMENT, "--replace", "--dry-run") == (
        "No change.\nDry run: nothing was written.\n"
    )


def test_a_dry_run_prints_the_plan_and_writes_nothing(tenant):
    before = export_tenant(tenant)
    server = Server.objects.get(name="time")
    output = import_config(changed(), "--replace", "--dry-run")
    assert output == (
        "Would import into tenant 'acme': created docs, dev/memory; changed dev/time (args); "
        "deleted ops, dev/fs.\n"
        "Dry run: nothing was written.\n"
    )
    assert export_tenant(tenant) == before
    assert Server.objects.get(name="time").updated_at == server.updated_at


def test_the_import_says_what_it_changed(tenant):
    output = import_config(changed(), "--replace")
    assert output == (
        "Imported into tenant 'acme': created docs, dev/memory; changed dev/time (args); "
        "deleted ops, dev/fs.\n"
    )
    assert list(export_tenant(tenant)["toolboxes"]) == ["dev", "docs"]


def test_a_dry_run_creates_no_tenant(db):
    out, saved = StringIO(), sys.stdin
    sys.stdin = io.StringIO(json.dumps(DOCUMENT))
    try:
        call_command(
            "import_config", "-", "--tenant", "new", "--create-tenant", "--dry-run", stdout=out
        )
    finally:
        sys.stdin = saved
    assert out.getvalue() == (
        "Would create tenant 'new'.\n"
        "Would import into tenant 'new': created dev, ops, dev/fs, dev/git, dev/time.\n"
        "Dry run: nothing was written.\n"
    )
    assert not Tenant.objects.filter(slug="new").exists()


def test_a_dry_run_of_an_invalid_file_says_what_is_wrong(tenant):
    bad = json.loads(json.dumps(DOCUMENT))
    bad["toolboxes"]["dev"]["mcpServers"]["fs"]["timeout"] = 0
    with pytest.raises(CommandError) as refused:
        import_config(bad, "--replace", "--dry-run")
    assert str(refused.value) == (
        "Nothing imported: toolboxes.dev.mcpServers.fs.timeout: must be at least 1"
    )
