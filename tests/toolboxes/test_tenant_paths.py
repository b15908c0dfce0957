"""Host paths named in a server's configuration are validated as each spawn checks them
(issue 20, findings 2 and 6): a tenant admin's catalog parameter names only its own
directories; a mount resolves to itself, below directories others can enter."""

from __future__ import annotations

import html

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from accounts.models import Membership
from kernel.tenant_paths import tenant_roots
from tests.harness.tenant_dirs import tenant_dir
from tests.toolboxes.helpers import raw_server_post
from toolboxes.config_file import ConfigError, import_tenant
from toolboxes.models import CatalogEntry, CatalogParameter, Server, Tenant, Toolbox

pytestmark = pytest.mark.django_db

SHOWN = "is outside the directories this tenant's servers may be shown"


@pytest.fixture
def toolbox() -> Toolbox:
    tenant = Tenant.objects.create(slug="acme")
    return Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")


@pytest.fixture
def files_entry() -> CatalogEntry:
    """The shape of the catalog's filesystem server: its directory a positional
    parameter, bound into the sandbox because it is an absolute path."""
    entry = CatalogEntry.objects.create(
        name="io.example/files", command="/usr/bin/true", args=["-y", "{{allowed_directory}}"]
    )
    CatalogParameter.objects.create(entry=entry, name="allowed_directory", required=True)
    return entry


def files_server(toolbox: Toolbox, entry: CatalogEntry, directory: str) -> Server:
    server = Server(
        toolbox=toolbox,
        name="files",
        catalog_entry=entry,
        parameters={"allowed_directory": directory},
    )
    server.full_clean()
    return server


def parameter_errors(toolbox: Toolbox, entry: CatalogEntry, directory: str) -> list[str]:
    with pytest.raises(ValidationError) as raised:
        files_server(toolbox, entry, directory)
    return raised.value.message_dict["parameters"]


def acme_root() -> str:
    [root] = tenant_roots("acme")
    return root


def test_another_tenants_directory_or_var_as_a_parameter_is_refused(toolbox, files_entry):
    """Finding 2: the filesystem server pointed at another tenant's writable mount, or at
    /var, was bound and listed."""
    other = str(tenant_dir("beta"))
    for directory in (other, "/var", f"{acme_root()}/../beta"):
        assert parameter_errors(toolbox, files_entry, directory) == [
            f"Parameter 'allowed_directory': {directory} {SHOWN}: {acme_root()}."
        ]


def test_a_directory_under_the_tenants_root_is_accepted(toolbox, files_entry):
    mine = tenant_dir("acme")
    files_server(toolbox, files_entry, str(mine)).save()  # full_clean raised nothing
    saved = Server.objects.get(toolbox=toolbox, name="files")
    assert saved.parameters == {"allowed_directory": str(mine)}


def test_a_symlink_or_a_closed_directory_under_the_root_is_refused(toolbox, files_entry):
    mine, other = tenant_dir("acme"), tenant_dir("beta")
    (mine / "link").symlink_to(other)
    assert parameter_errors(toolbox, files_entry, f"{mine}/link") == [
        f"Parameter 'allowed_directory': {mine}/link resolves to {other}: name the real path, "
        "without symlinks."
    ]
    (mine / "locked").mkdir(mode=0o700)
    (mine / "locked" / "data").mkdir()
    assert parameter_errors(toolbox, files_entry, f"{mine}/locked/data") == [
        f"Parameter 'allowed_directory': {mine}/locked/data is below {mine}/locked, which "
        "other users cannot enter (mode 0700)."
    ]


def test_without_a_tenant_root_no_path_may_be_named(toolbox, files_entry, settings):
    settings.WORKBENCH_SANDBOX_TENANT_ROOT = ""
    assert parameter_errors(toolbox, files_entry, "/srv/data") == [
        f"Parameter 'allowed_directory': /srv/data {SHOWN}: none "
        "(WORKBENCH_SANDBOX_TENANT_ROOT is not set)."
    ]


def test_the_tenant_admins_parameter_form_says_why(client, django_user_model, toolbox, files_entry):
    user = django_user_model.objects.create_user("tam", password="pw-123456", is_staff=True)
    Membership.objects.create(user=user, tenant=toolbox.tenant, role="admin")
    client.force_login(user)
    data = {
        "toolbox": toolbox.pk,
        "name": "files",
        "position": "0",
        "enabled": "on",
        "catalog_entry": files_entry.pk,
        "tool_filters": '["*"]',
        "timeout": "60",
        "idle_timeout": "",
        "parameter_values__allowed_directory": "/var",
    }
    response = client.post(reverse("admin:toolboxes_server_add"), data)
    assert response.status_code == 200
    expected = f"Parameter 'allowed_directory': /var {SHOWN}: {acme_root()}."
    assert html.escape(expected) in response.content.decode()
    assert not Server.objects.exists()


# An operator's configuration: mounts anywhere, but resolved and enterable


def mount_errors(toolbox: Toolbox, path: str) -> list[str]:
    server = Server(toolbox=toolbox, name="m", command="/usr/bin/true", mounts=[{"path": path}])
    with pytest.raises(ValidationError) as raised:
        server.full_clean()
    return raised.value.message_dict["mounts"]


def test_a_mount_through_a_symlink_or_below_a_closed_directory_is_refused(toolbox):
    base, protected = tenant_dir("acme"), tenant_dir("acme")
    (base / "link").symlink_to(protected)
    assert mount_errors(toolbox, f"{base}/link") == [
        f"item 0: {base}/link resolves to {protected}: name the real path, without symlinks"
    ]
    (base / "locked").mkdir(mode=0o700)
    assert mount_errors(toolbox, f"{base}/locked/out") == [
        f"item 0: {base}/locked/out is below {base}/locked, which other users cannot enter "
        "(mode 0700)"
    ]


def test_import_config_names_the_mount_refused(toolbox):
    base = tenant_dir("acme")
    (base / "link").symlink_to("/var")
    data = {
        "toolboxes": {
            "ops": {
                "description": "ops tools",
                "mcpServers": {"files": {"command": "x", "mounts": [{"path": f"{base}/link"}]}},
            }
        }
    }
    with pytest.raises(ConfigError) as raised:
        import_tenant(toolbox.tenant, data)
    assert str(raised.value) == (
        f"toolboxes.ops.mcpServers.files.mounts: item 0: {base}/link resolves to /var: name "
        "the real path, without symlinks"
    )


def test_an_operators_raw_arguments_are_checked_as_the_spawn_will(admin_client, toolbox):
    add = reverse("admin:toolboxes_server_add")
    response = admin_client.post(
        add, raw_server_post(toolbox, command="/usr/bin/ls", args="/var", cwd="/var")
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert page.count(html.escape(f"/var {SHOWN}: {acme_root()}")) == 2  # args and cwd
    # Mounted by the operator, it needs no bind of its own.
    response = admin_client.post(
        add,
        raw_server_post(toolbox, command="/usr/bin/ls", args="/var", mounts='[{"path": "/var"}]'),
    )
    assert response.status_code == 302, response.content.decode()[:3000]
