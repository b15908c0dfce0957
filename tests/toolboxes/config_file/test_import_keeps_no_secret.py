"""Issue 31, finding 3 through `import_config`: the file gives every value it means (a null
is not a value: nothing is kept from the stored server), so a server moved to another
catalog entry by a file carries no secret of its old one."""

from __future__ import annotations

import io
import json
import sys

import pytest
from django.core.management import CommandError, call_command

from toolboxes.models import CatalogEntry, CatalogParameter, Server, Tenant, Toolbox

VENDOR_A_SECRET = "vendor-a-token-stays-home"


@pytest.fixture
def va(db):
    for name in ("rt/vendor-a", "rt/vendor-b"):
        entry = CatalogEntry.objects.create(
            name=name,
            transport="streamable-http",
            url=f"https://{name.split('/')[1]}.example.com/mcp",
            headers={"Authorization": "Bearer {{token}}"},
        )
        CatalogParameter.objects.create(entry=entry, name="token", secret=True)
    toolbox = Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme"), name="dev", description="d"
    )
    server = Server(
        toolbox=toolbox,
        name="va",
        catalog_entry=CatalogEntry.objects.get(name="rt/vendor-a"),
        parameters={"token": VENDOR_A_SECRET},
    )
    server.full_clean()
    server.save()
    return server


def import_text(data: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(data)))
    call_command("import_config", "-", "--tenant", "acme", stdout=io.StringIO())


def moved(parameters: dict) -> dict:
    server = {"catalog": "rt/vendor-b", "parameters": parameters}
    return {"toolboxes": {"dev": {"description": "d", "mcpServers": {"va": server}}}}


def test_a_null_is_not_a_value_to_keep(va, monkeypatch):
    with pytest.raises(CommandError) as caught:
        import_text(moved({"token": None}), monkeypatch)
    assert str(caught.value) == (
        "Nothing imported: toolboxes.dev.mcpServers.va.parameters.token: must be a string"
    )
    va.refresh_from_db()
    assert (va.catalog_entry.name, va.secret_parameters) == (
        "rt/vendor-a",
        {"token": VENDOR_A_SECRET},
    )


def test_a_server_moved_by_a_file_carries_no_secret_of_its_old_entry(va, monkeypatch):
    import_text(moved({}), monkeypatch)
    va.refresh_from_db()
    assert (va.catalog_entry.name, va.parameters, va.secret_parameters) == ("rt/vendor-b", {}, {})
