"""Catalog entries, servers made from them, and the admin of both by role."""

import sys

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse

from accounts.models import Membership
from mcp_gateway.database.reads import load_tenant
from tests.toolboxes.helpers import catalog_server_post, raw_server_post
from toolboxes import versions
from toolboxes.launch import launch_of
from toolboxes.models import CatalogEntry, CatalogParameter, Server, Tenant, Toolbox

SECRET = "sk-live-7f3a9c-never-shown"


@pytest.fixture
def entry(db):
    entry = CatalogEntry.objects.create(
        name="io.example/weather",
        title="Weather",
        command="npx",
        args=["-y", "weather@1.0.0", "--units={{units}}", "{{city}}", "--verbose={{verbose}}"],
        env={"API_KEY": "{{api_key}}", "STATIC": "yes"},
        mounts=[{"path": "/srv/weather"}],
        network=False,
        memory_limit_mb=256,
    )
    CatalogParameter.objects.create(entry=entry, name="units", choices=["metric", "imperial"])
    CatalogParameter.objects.create(entry=entry, name="city", required=True, position=1)
    CatalogParameter.objects.create(entry=entry, name="verbose", position=2)
    CatalogParameter.objects.create(
        entry=entry, name="api_key", required=True, secret=True, position=3
    )
    CatalogParameter.objects.filter(entry=entry, name="units").update(default="metric")
    return entry


@pytest.fixture
def toolbox(db):
    tenant = Tenant.objects.create(slug="acme")
    return Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")


def catalog_server(toolbox, entry, name="weather", **values):
    server = Server(toolbox=toolbox, name=name, catalog_entry=entry, parameters=values)
    server.full_clean()
    server.save()
    return server


# Resolution


def test_a_catalog_server_runs_its_entry_with_its_values(toolbox, entry):
    server = catalog_server(toolbox, entry, city="Paris", api_key=SECRET)
    launch = launch_of(Server.objects.get(pk=server.pk))
    assert launch.command == "npx"
    # The default fills `units`; the empty optional `verbose` leaves its argument out.
    assert launch.args == ["-y", "weather@1.0.0", "--units=metric", "Paris"]
    assert launch.env == {"API_KEY": SECRET, "STATIC": "yes"}
    assert (launch.mounts, launch.network, launch.memory_limit_mb) == (
        [{"path": "/srv/weather"}],
        False,
        256,
    )


def test_secret_values_are_filed_encrypted_and_plain_ones_readable(toolbox, entry):
    server = catalog_server(toolbox, entry, city="Paris", api_key=SECRET)
    assert server.parameters == {"city": "Paris"}
    assert server.secret_parameters == {"api_key": SECRET}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT parameters, secret_parameters FROM toolboxes_server WHERE id = %s",
            [server.pk],
        )
        plain, secret = cursor.fetchone()
    assert "Paris" in str(plain)
    assert SECRET not in str(secret) and "api_key" in str(secret)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"api_key": "k"}, "Parameter 'city' is required."),
        ({"city": "x", "api_key": "k", "units": "kelvin"}, "must be one of: metric, imperial."),
        ({"city": "x", "api_key": "k", "color": "red"}, "Unknown parameter 'color'"),
        ({"city": "${SECRET_KEY}", "api_key": "k"}, "Parameter 'city' must not contain '${'."),
        ({"city": "--exec=sh", "api_key": "k"}, "Parameter 'city' must not start with '-'."),
    ],
)
def test_parameter_values_are_checked(toolbox, entry, values, message):
    with pytest.raises(ValidationError) as error:
        catalog_server(toolbox, entry, **values)
    assert any(message in text for text in error.value.message_dict["parameters"])


def test_a_catalog_server_cannot_carry_its_own_command(toolbox, entry):
    server = Server(
        toolbox=toolbox,
        name="w",
        catalog_entry=entry,
        command="/bin/sh",
        parameters={"city": "x", "api_key": "k"},
    )
    with pytest.raises(ValidationError) as error:
        server.full_clean()
    assert error.value.message_dict["command"] == [
        "A server made from a catalog entry takes this from the entry."
    ]


def test_an_entry_edit_changes_the_fingerprint_and_bumps_the_tenant(
    toolbox, entry, django_capture_on_commit_callbacks
):
    catalog_server(toolbox, entry, city="Paris", api_key=SECRET)
    tenant_id = toolbox.tenant_id
    before = load_tenant(tenant_id, 1).toolboxes[0].servers[0]
    cache.set(versions.version_key(tenant_id), 1)
    with django_capture_on_commit_callbacks(execute=True):
        entry.args = [*entry.args, "--fast"]
        entry.save()
    assert cache.get(versions.version_key(tenant_id)) != 1
    after = load_tenant(tenant_id, 2).toolboxes[0].servers[0]
    assert after.args[-1] == "--fast"
    assert after.fingerprint != before.fingerprint
    assert after.sandbox.material() == before.sandbox.material()


def test_a_parameter_default_edit_bumps_the_tenant(
    toolbox, entry, django_capture_on_commit_callbacks
):
    catalog_server(toolbox, entry, city="Paris", api_key=SECRET)
    cache.set(versions.version_key(toolbox.tenant_id), 1)
    with django_capture_on_commit_callbacks(execute=True):
        CatalogParameter.objects.get(name="units").save()
    assert cache.get(versions.version_key(toolbox.tenant_id)) != 1


def test_a_remote_entry_fills_url_and_headers(toolbox):
    entry = CatalogEntry.objects.create(
        name="remote",
        transport="streamable-http",
        url="https://{{region}}.example.com/mcp",
        headers={"Authorization": "Bearer {{token}}", "X-Optional": "{{opt}}"},
    )
    CatalogParameter.objects.create(entry=entry, name="region", default="eu")
    CatalogParameter.objects.create(entry=entry, name="token", secret=True, required=True)
    CatalogParameter.objects.create(entry=entry, name="opt")
    server = catalog_server(toolbox, entry, token=SECRET)
    config = load_tenant(toolbox.tenant_id, 1).toolboxes[0].servers[0]
    assert server.transport == "streamable-http"
    assert config.url == "https://eu.example.com/mcp"
    assert dict(config.headers) == {"Authorization": f"Bearer {SECRET}"}


def test_an_entry_in_use_cannot_be_deleted(toolbox, entry):
    from django.db.models import ProtectedError

    catalog_server(toolbox, entry, city="x", api_key="k")
    with pytest.raises(ProtectedError):
        entry.delete()


# Admin


def member(client, django_user_model, toolbox, role):
    user = django_user_model.objects.create_user(
        f"member-{role}", password="pw-123456", is_staff=True
    )
    Membership.objects.create(user=user, tenant=toolbox.tenant, role=role)
    client.force_login(user)
    return client


@pytest.fixture
def tenant_admin(client, django_user_model, toolbox):
    """A member with the admin role in the toolbox's tenant (not an operator)."""
    return member(client, django_user_model, toolbox, "admin")


@pytest.fixture
def tenant_viewer(client, django_user_model, toolbox):
    return member(client, django_user_model, toolbox, "viewer")


RAW_INPUTS = ('name="command"', 'name="args"', 'name="cwd"', 'name="url"', 'name="mounts"')


def test_tenant_admin_adds_a_server_from_the_catalog(tenant_admin, toolbox, entry):
    add = reverse("admin:toolboxes_server_add")
    page = tenant_admin.get(f"{add}?catalog_entry={entry.pk}").content.decode()
    for raw in RAW_INPUTS:
        assert raw not in page
    assert "weather@1.0.0" not in page and "npx" not in page
    assert 'name="parameter_values__api_key"' in page and 'type="password"' in page
    response = tenant_admin.post(
        add,
        catalog_server_post(
            toolbox,
            entry,
            parameter_values__city="Lyon",
            parameter_values__api_key=SECRET,
            command="/bin/sh",  # not a field of this form: ignored
            args='["-c", "id"]',
        ),
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    server = Server.objects.get(name="weather")
    assert (server.command, server.args) == ("", [])
    assert launch_of(server).args == ["-y", "weather@1.0.0", "--units=metric", "Lyon"]
    assert server.secret_parameters == {"api_key": SECRET}
    change = tenant_admin.get(reverse("admin:toolboxes_server_change", args=[server.pk]))
    html = change.content.decode()
    assert SECRET not in html and "stored: leave empty to keep" in html
    for raw in RAW_INPUTS:
        assert raw not in html


def test_tenant_admin_must_pick_an_entry(tenant_admin, toolbox, entry):
    data = catalog_server_post(toolbox, entry, catalog_entry="", command="/bin/sh")
    response = tenant_admin.post(reverse("admin:toolboxes_server_add"), data)
    assert response.status_code == 200
    assert "This field is required." in response.content.decode()
    assert not Server.objects.exists()


def test_a_missing_required_parameter_is_shown_beside_the_parameters(tenant_admin, toolbox, entry):
    response = tenant_admin.post(
        reverse("admin:toolboxes_server_add"),
        catalog_server_post(toolbox, entry, parameter_values__api_key=SECRET),
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "Parameter &#x27;city&#x27; is required." in html
    assert SECRET not in html
    assert not Server.objects.exists()


def test_a_stored_secret_is_kept_when_left_empty(tenant_admin, toolbox, entry):
    server = catalog_server(toolbox, entry, city="Paris", api_key=SECRET)
    response = tenant_admin.post(
        reverse("admin:toolboxes_server_change", args=[server.pk]),
        catalog_server_post(
            toolbox, entry, parameter_values__city="Nice", parameter_values__api_key=""
        ),
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    server.refresh_from_db()
    assert server.parameters == {"city": "Nice"}
    assert server.secret_parameters == {"api_key": SECRET}


def test_changing_the_entry_drops_the_stored_secret(tenant_admin, toolbox, entry):
    other = CatalogEntry.objects.create(name="other", command="npx", args=["{{dir}}"])
    CatalogParameter.objects.create(entry=other, name="dir")
    CatalogParameter.objects.create(entry=other, name="api_key", secret=True)
    server = catalog_server(toolbox, entry, city="Paris", api_key=SECRET)
    url = reverse("admin:toolboxes_server_change", args=[server.pk])
    response = tenant_admin.post(
        url, catalog_server_post(toolbox, other, parameter_values__api_key="")
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    server.refresh_from_db()
    assert server.catalog_entry == other
    assert server.secret_parameters == {}
    assert server.parameters == {}


def test_tenant_admin_cannot_make_a_raw_server_catalog_made_or_see_its_command(
    tenant_admin, toolbox, entry
):
    raw = Server.objects.create(toolbox=toolbox, name="raw", command="/opt/tool", args=["-x"])
    url = reverse("admin:toolboxes_server_change", args=[raw.pk])
    html = tenant_admin.get(url).content.decode()
    assert "/opt/tool" not in html
    response = tenant_admin.post(
        url,
        catalog_server_post(toolbox, entry, name="raw", catalog_entry=entry.pk, timeout="5"),
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    raw.refresh_from_db()
    assert (raw.catalog_entry, raw.command, raw.timeout) == (None, "/opt/tool", 5)


def test_tenant_admin_in_the_toolbox_inline_sees_only_catalog_fields(tenant_admin, toolbox, entry):
    catalog_server(toolbox, entry, city="Paris", api_key=SECRET)
    html = tenant_admin.get(
        reverse("admin:toolboxes_toolbox_change", args=[toolbox.pk])
    ).content.decode()
    assert 'name="servers-0-catalog_entry"' in html
    assert 'name="servers-0-parameter_values__api_key"' in html
    for raw in RAW_INPUTS:
        assert raw.replace('name="', 'name="servers-0-') not in html
    # The entry's command line stays hidden ("npx" itself is on the page: the toolbox
    # endpoint's Claude Desktop configuration runs mcp-remote with it).
    assert SECRET not in html and "weather@1.0.0" not in html


def test_tenant_admin_adds_from_the_catalog_in_the_toolbox_inline(tenant_admin, toolbox, entry):
    prefix = "servers-0-"
    data = {
        "tenant": toolbox.tenant_id,
        "name": "dev",
        "description": "dev tools",
        "servers-TOTAL_FORMS": "1",
        "servers-INITIAL_FORMS": "0",
        "servers-MIN_NUM_FORMS": "0",
        "servers-MAX_NUM_FORMS": "1000",
    }
    fields = catalog_server_post(toolbox, entry, parameter_values__city="Oslo")
    fields["parameter_values__api_key"] = SECRET
    fields.pop("toolbox")
    data.update({prefix + key: value for key, value in fields.items()})
    response = tenant_admin.post(reverse("admin:toolboxes_toolbox_change", args=[toolbox.pk]), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    server = toolbox.servers.get()
    assert server.secret_parameters == {"api_key": SECRET}
    assert launch_of(server).args[-1] == "Oslo"


def test_the_catalog_is_the_operators(tenant_admin, admin_client, entry):
    changelist = reverse("admin:toolboxes_catalogentry_changelist")
    assert tenant_admin.get(changelist).status_code == 403
    assert tenant_admin.get(reverse("admin:index")).content.decode().count("Catalog") == 0
    assert admin_client.get(changelist).status_code == 200


def entry_post(**fields):
    data = {
        "name": "io.example/new",
        "title": "",
        "description": "",
        "transport": "stdio",
        "command": sys.executable,
        "cwd": "",
        "args": '["-m", "tool", "--root={{root}}"]',
        "env": "{}",
        "url": "",
        "headers": "{}",
        "mounts": "[]",
        "network": "on",
        "parameters-TOTAL_FORMS": "1",
        "parameters-INITIAL_FORMS": "0",
        "parameters-MIN_NUM_FORMS": "0",
        "parameters-MAX_NUM_FORMS": "1000",
        "parameters-0-position": "0",
        "parameters-0-name": "root",
        "parameters-0-description": "",
        "parameters-0-default": "",
        "parameters-0-choices": "[]",
        "parameters-0-required": "on",
    }
    data.update(fields)
    return data


def test_operator_curates_an_entry_with_parameters_inline(admin_client, db):
    response = admin_client.post(reverse("admin:toolboxes_catalogentry_add"), entry_post())
    assert response.status_code == 302, response.content.decode()[:3000]
    entry = CatalogEntry.objects.get()
    assert [(p.name, p.required) for p in entry.parameters.all()] == [("root", True)]


@pytest.mark.parametrize(
    ("fields", "warned"),
    [
        ({"parameters-0-secret": "on"}, True),  # a secret in an argument: ps shows it
        ({}, False),
        (
            {"parameters-0-secret": "on", "args": '["-m", "tool"]', "env": '{"ROOT": "{{root}}"}'},
            False,
        ),
    ],
)
def test_a_secret_parameter_in_an_argument_is_warned_about(admin_client, db, fields, warned):
    response = admin_client.post(
        reverse("admin:toolboxes_catalogentry_add"), entry_post(**fields), follow=True
    )
    assert response.status_code == 200 and CatalogEntry.objects.exists()
    shown = [str(message) for message in response.context["messages"]]
    warning = (
        "Secret parameters in an argument or the URL: root. A server's arguments are visible "
        "to the host's users (ps) and a URL's query reaches the remote server's logs: pass "
        "secrets in env or headers instead."
    )
    assert (warning in shown) is warned


def test_operator_cannot_use_an_undeclared_placeholder(admin_client, db):
    data = entry_post(**{"parameters-0-name": "other"})
    response = admin_client.post(reverse("admin:toolboxes_catalogentry_add"), data)
    assert response.status_code == 200
    assert "Declare a parameter for each placeholder: args[2]: {{root}}." in (
        response.content.decode()
    )
    assert not CatalogEntry.objects.exists()


def test_operator_still_adds_raw_servers(admin_client, toolbox):
    data = raw_server_post(toolbox)
    page = admin_client.get(reverse("admin:toolboxes_server_add")).content.decode()
    assert 'name="command"' in page and 'name="catalog_entry"' in page
    response = admin_client.post(reverse("admin:toolboxes_server_add"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Server.objects.get(name="raw").command == "/opt/tool"


def test_operator_picking_an_entry_keeps_nothing_of_a_server_of_their_own(
    admin_client, toolbox, entry
):
    """The form hides a server of one's own once an entry is picked: what was typed there
    is dropped, not an error on fields out of sight."""
    data = raw_server_post(
        toolbox,
        name="weather",
        catalog_entry=entry.pk,
        args='["-x"]',
        parameter_values__city="Lyon",
        parameter_values__api_key=SECRET,
    )
    response = admin_client.post(reverse("admin:toolboxes_server_add"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    server = Server.objects.get(name="weather")
    assert (server.command, server.args, server.catalog_entry) == ("", [], entry)
    assert "Lyon" in launch_of(server).args


def test_operator_reads_what_a_catalog_server_runs_secrets_masked(admin_client, toolbox):
    entry = CatalogEntry.objects.create(
        name="io.example/keyed", command="npx", args=["-y", "keyed", "--key", "{{api_key}}"]
    )
    CatalogParameter.objects.create(entry=entry, name="api_key", secret=True, required=True)
    server = catalog_server(toolbox, entry, name="keyed", api_key=SECRET)
    html = admin_client.get(reverse("admin:toolboxes_server_change", args=[server.pk]))
    page = html.content.decode()
    assert "What it runs:" in page
    assert "npx -y keyed --key &#x27;********&#x27;" in page
    assert SECRET not in page


def test_a_viewer_reads_parameters_with_secrets_masked(tenant_viewer, toolbox, entry):
    server = catalog_server(toolbox, entry, city="Paris", api_key=SECRET)
    html = tenant_viewer.get(
        reverse("admin:toolboxes_server_change", args=[server.pk])
    ).content.decode()
    assert "api_key=********, city=Paris" in html
    assert SECRET not in html and "npx" not in html
    response = tenant_viewer.post(
        reverse("admin:toolboxes_server_change", args=[server.pk]),
        catalog_server_post(toolbox, entry, parameter_values__city="Rome"),
    )
    assert response.status_code == 403
    server.refresh_from_db()
    assert server.parameters == {"city": "Paris"}
