"""A server's sandbox settings: validated, exported only when set, imported back, and in
the gateway's snapshot and fingerprint."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError

from mcp_gateway.database.reads import load_tenant
from mcp_gateway.snapshots.sandbox import Limits, Mount
from toolboxes.config_file import ConfigError, export_tenant, import_tenant
from toolboxes.models import Server, Tenant, Toolbox

pytestmark = pytest.mark.django_db

PROJECT = str(settings.BASE_DIR)


def stdio(**fields: object) -> Server:
    tenant = Tenant.objects.create(slug="acme")
    toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
    return Server(toolbox=toolbox, name="files", command="/usr/bin/true", **fields)


@pytest.mark.parametrize(
    ("mounts", "message"),
    [
        ("/srv", "must be a list of mounts"),
        ([{"path": "srv"}], "item 0: the path must be absolute"),
        ([{"path": "/srv/../etc"}], "item 0: the path must not contain '..'"),
        ([{"path": "/srv", "mode": "rw"}], "item 0: unknown field 'mode'"),
        ([{"path": "/srv", "writable": "yes"}], "item 0: writable must be true or false"),
        ([{"path": "/srv"}, {"path": "/srv"}], "item 1: /srv is mounted twice"),
        ([{"path": f"{PROJECT}/.venv"}], f"would show the gateway's own files ({PROJECT})"),
        ([{"path": "/"}], "item 0: / would show the gateway's own files"),
    ],
)
def test_mounts_are_validated(mounts, message):
    server = stdio(mounts=mounts)
    with pytest.raises(ValidationError) as caught:
        server.full_clean()
    assert any(message in text for text in caught.value.message_dict["mounts"])


def test_export_writes_sandbox_fields_only_when_set_and_import_reads_them_back():
    server = stdio()
    server.full_clean()
    server.save()
    tenant = server.toolbox.tenant
    plain = export_tenant(tenant)["toolboxes"]["dev"]["mcpServers"]["files"]
    assert not {"mounts", "network", "limits"} & set(plain)

    server.mounts = [{"path": "/srv/data"}, {"path": "/srv/out", "writable": True}]
    server.network = False
    server.memory_limit_mb, server.cpu_limit_seconds = 256, 30
    server.full_clean()
    server.save()
    data = export_tenant(tenant)
    exported = data["toolboxes"]["dev"]["mcpServers"]["files"]
    assert exported["mounts"] == [{"path": "/srv/data"}, {"path": "/srv/out", "writable": True}]
    assert exported["network"] is False
    assert exported["limits"] == {"memoryMb": 256, "cpuSeconds": 30}

    Server.objects.all().delete()
    import_tenant(tenant, data)
    back = Server.objects.get()
    assert back.mounts == server.mounts and back.network is False
    assert (back.memory_limit_mb, back.process_limit, back.cpu_limit_seconds) == (256, None, 30)

    snapshot = load_tenant(tenant.pk, 1).toolboxes[0].servers[0]
    assert snapshot.sandbox.owner == tenant.pk
    assert snapshot.sandbox.mounts == (Mount("/srv/data"), Mount("/srv/out", writable=True))
    assert snapshot.sandbox.limits == Limits(memory_mb=256, cpu_seconds=30)
    back.network = True
    back.save()
    assert load_tenant(tenant.pk, 2).toolboxes[0].servers[0].fingerprint != snapshot.fingerprint


def test_import_names_the_field_of_a_bad_mount():
    tenant = Tenant.objects.create(slug="acme")
    data = {
        "toolboxes": {
            "dev": {
                "description": "dev tools",
                "mcpServers": {"files": {"command": "x", "mounts": [{"path": "relative"}]}},
            }
        }
    }
    with pytest.raises(ConfigError) as caught:
        import_tenant(tenant, data)
    assert str(caught.value) == (
        "toolboxes.dev.mcpServers.files.mounts: item 0: the path must be absolute"
    )
