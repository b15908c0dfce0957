"""A server's notes, the admins' own (the evidence that a field is one entry of
`toolboxes.server_fields`): both forms show them; the file, the API and the gateway do not
carry them."""

from __future__ import annotations

import pytest

from api.schemas import ServerOut
from toolboxes.admin.server_layout import server_fieldsets
from toolboxes.config_file import export_server
from toolboxes.models import Server, Tenant, Toolbox
from toolboxes.server_fields import SNAPSHOT_READS


def shown(operator: bool) -> list[str]:
    fields: list[str] = []
    for _, options in server_fieldsets(operator, "check_status", []):
        for row in options["fields"]:
            fields += list(row) if isinstance(row, tuple) else [row]
    return fields


def test_both_forms_show_the_notes():
    assert "notes" in shown(operator=True)
    assert "notes" in shown(operator=False)


@pytest.mark.django_db
def test_the_notes_stay_in_the_admin():
    toolbox = Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme"), name="dev", description="Dev"
    )
    server = Server.objects.create(toolbox=toolbox, name="t", command="t", notes="ask Ana")
    assert "notes" not in export_server(server)
    assert "notes" not in ServerOut.of(server, operator=True).model_dump()
    assert "notes" not in SNAPSHOT_READS
