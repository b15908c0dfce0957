"""A server's host ports (issue 31): the one way a sandboxed server reaches the host's
loopback, one TCP port at a time. Operators set them (on a server or a catalog entry), in
the form `127.0.0.1:PORT`, never the gateway's own database or shared store; a tenant
admin can neither see nor post them; they reach the sandbox and the JSON."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from accounts.models import Membership
from mcp_gateway.database.reads import server_config
from tests.toolboxes.helpers import catalog_server_post, raw_server_post
from toolboxes.config_file import ConfigError, export_server, export_tenant, import_tenant
from toolboxes.models import CatalogEntry, Server, Tenant, Toolbox
from toolboxes.validators import gateway_ports, validate_host_ports

SQLITE = {"ENGINE": "django.db.backends.sqlite3", "NAME": "/srv/wb/db.sqlite3"}
FILE_STORE = {"BACKEND": "mcp_gateway.store.backends.EmbeddedStore", "LOCATION": "/srv/wb/st"}


@pytest.fixture
def toolbox(db):
    tenant = Tenant.objects.create(slug="acme")
    return Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")


@pytest.mark.parametrize(
    ("value", "message", "code"),
    [
        ("127.0.0.1:8080", 'must be a list of "127.0.0.1:PORT" items', "not_a_list"),
        ([8080], 'must be a list of "127.0.0.1:PORT" items', "not_a_list"),
        (["8080"], "item 0: '8080' is not 127.0.0.1:PORT", "bad_host_port"),
        (
            ["127.0.0.1:80", "127.0.0.1"],
            "item 1: '127.0.0.1' is not 127.0.0.1:PORT",
            "bad_host_port",
        ),
        (["127.0.0.1:http"], "item 0: '127.0.0.1:http' is not 127.0.0.1:PORT", "bad_host_port"),
        ([" 127.0.0.1:80"], "item 0: ' 127.0.0.1:80' is not 127.0.0.1:PORT", "bad_host_port"),
        (["127.0.0.1:80-90"], "item 0: '127.0.0.1:80-90' is not 127.0.0.1:PORT", "bad_host_port"),
        (
            ["localhost:8080"],
            "item 0: 'localhost:8080': only the host's loopback (127.0.0.1) is named here; "
            "other hosts go in the network allowance",
            "not_loopback",
        ),
        (
            ["10.1.2.3:5432"],
            "item 0: '10.1.2.3:5432': only the host's loopback (127.0.0.1) is named here; "
            "other hosts go in the network allowance",
            "not_loopback",
        ),
        (
            ["127.0.0.2:8080"],
            "item 0: '127.0.0.2:8080': only the host's loopback (127.0.0.1) is named here; "
            "other hosts go in the network allowance",
            "not_loopback",
        ),
        (
            ["127.0.0.1:0"],
            "item 0: '127.0.0.1:0': the port must be between 1 and 65535",
            "bad_port",
        ),
        (
            ["127.0.0.1:65536"],
            "item 0: '127.0.0.1:65536': the port must be between 1 and 65535",
            "bad_port",
        ),
        (
            ["127.0.0.1:8080", "127.0.0.1:08080"],
            "item 1: '127.0.0.1:08080' is named twice",
            "duplicate",
        ),
    ],
)
def test_a_bad_host_port_is_refused_with_its_reason(value, message, code):
    with pytest.raises(ValidationError) as raised:
        validate_host_ports(value)
    assert raised.value.messages == [message]
    assert raised.value.error_list[0].code == code


def test_loopback_ports_are_allowed():
    validate_host_ports([])
    validate_host_ports(["127.0.0.1:8080", "127.0.0.1:1", "127.0.0.1:65535"])


def test_the_gateways_own_database_and_shared_store_are_never_a_host_port():
    postgres = {"ENGINE": "django.db.backends.postgresql", "HOST": "127.0.0.1", "PORT": "5433"}
    redis = {"BACKEND": "x", "LOCATION": "redis://127.0.0.1:6380/0"}
    assert gateway_ports(postgres, redis) == {
        5433: "the gateway's database",
        6380: "the gateway's shared store",
    }
    socket = {"ENGINE": "django.db.backends.postgresql", "HOST": "", "PORT": ""}
    replicas = {"LOCATION": ["redis://localhost", "rediss://cache.internal:6390"]}
    assert gateway_ports(socket, replicas) == {
        5432: "the gateway's database",  # the same server, whatever the socket
        6379: "the gateway's shared store",
    }
    elsewhere = {"ENGINE": "django.db.backends.postgresql", "HOST": "db.internal"}
    assert gateway_ports(elsewhere, FILE_STORE) == {}
    assert gateway_ports(SQLITE, FILE_STORE) == {}


def test_a_host_port_of_the_gateways_database_is_refused(settings):
    database = settings.DATABASES["default"]
    if "postgresql" not in database["ENGINE"] or database.get("HOST") not in ("127.0.0.1", ""):
        pytest.skip("the test database is not a PostgreSQL on this host's loopback")
    port = int(database.get("PORT") or 5432)
    with pytest.raises(ValidationError) as raised:
        validate_host_ports([f"127.0.0.1:{port}"])
    assert raised.value.messages == [
        f"item 0: '127.0.0.1:{port}' is the gateway's database: no server may reach it"
    ]


def test_the_host_ports_reach_the_sandbox_and_the_export(toolbox):
    server = Server(
        toolbox=toolbox,
        name="local",
        command="/bin/true",
        host_ports=["127.0.0.1:8080", "127.0.0.1:3000"],
    )
    server.full_clean()
    server.save()
    assert server_config(server).sandbox.host_ports == (8080, 3000)
    assert export_server(server)["hostPorts"] == ["127.0.0.1:8080", "127.0.0.1:3000"]
    plain = Server.objects.create(toolbox=toolbox, name="plain", command="/bin/true")
    assert "hostPorts" not in export_server(plain)
    assert server_config(plain).sandbox.host_ports == ()


def test_a_change_of_host_ports_changes_the_fingerprint_and_none_keeps_it(toolbox):
    """A server's connection restarts when its ports change; the servers without any keep
    the fingerprint they had (an upgrade restarts none of them)."""
    server = Server.objects.create(toolbox=toolbox, name="local", command="/bin/true")
    before = server_config(server)
    assert before.sandbox.material() == [[], True, [None, None, None, None], []]
    server.host_ports = ["127.0.0.1:8080"]
    server.save()
    assert server_config(server).fingerprint != before.fingerprint


def test_the_json_file_takes_host_ports_and_says_where_one_is_wrong(toolbox):
    document = {
        "toolboxes": {
            "dev": {
                "description": "dev tools",
                "mcpServers": {
                    "local": {"command": "/bin/true", "hostPorts": ["127.0.0.1:8080"]},
                },
            }
        }
    }
    import_tenant(toolbox.tenant, document)
    assert Server.objects.get(name="local").host_ports == ["127.0.0.1:8080"]
    assert export_tenant(toolbox.tenant) == {
        "toolboxes": {
            "dev": {
                "description": "dev tools",
                "mcpServers": {
                    "local": {
                        "command": "/bin/true",
                        "args": [],
                        "env": {},
                        "hostPorts": ["127.0.0.1:8080"],
                        "toolFilters": ["*"],
                    }
                },
            }
        }
    }
    document["toolboxes"]["dev"]["mcpServers"]["local"]["hostPorts"] = ["10.0.2.2:8080"]
    with pytest.raises(ConfigError) as raised:
        import_tenant(toolbox.tenant, document)
    assert str(raised.value) == (
        "toolboxes.dev.mcpServers.local.hostPorts: item 0: '10.0.2.2:8080': only the host's "
        "loopback (127.0.0.1) is named here; other hosts go in the network allowance"
    )


def test_a_catalog_made_server_takes_the_entrys_host_ports(toolbox):
    entry = CatalogEntry.objects.create(
        name="io.example/local", command="/bin/true", host_ports=["127.0.0.1:8080"]
    )
    server = Server(toolbox=toolbox, name="local", catalog_entry=entry)
    server.full_clean()
    server.save()
    assert server_config(server).sandbox.host_ports == (8080,)
    own = Server(toolbox=toolbox, name="local2", catalog_entry=entry, host_ports=["127.0.0.1:9"])
    with pytest.raises(ValidationError) as raised:
        own.full_clean()
    assert raised.value.message_dict["host_ports"] == [
        "A server made from a catalog entry takes this from the entry."
    ]


def test_a_tenant_admin_neither_sees_nor_sets_them(client, django_user_model, toolbox):
    user = django_user_model.objects.create_user("tam", password="pw-123456", is_staff=True)
    Membership.objects.create(user=user, tenant=toolbox.tenant, role="admin")
    client.force_login(user)
    entry = CatalogEntry.objects.create(name="io.example/t", command="/bin/true")
    add = reverse("admin:toolboxes_server_add")
    page = client.get(f"{add}?catalog_entry={entry.pk}").content.decode()
    assert 'name="host_ports"' not in page
    # host_ports is not a field of this form: ignored
    data = catalog_server_post(toolbox, entry, name="t", host_ports='["127.0.0.1:5432"]')
    response = client.post(add, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Server.objects.get(name="t").host_ports == []


def test_an_operator_sets_them_on_the_server_form(admin_client, toolbox):
    add = reverse("admin:toolboxes_server_add")
    assert 'name="host_ports"' in admin_client.get(add).content.decode()
    data = raw_server_post(toolbox, name="local", host_ports='["127.0.0.1:8080"]')
    response = admin_client.post(add, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Server.objects.get(name="local").host_ports == ["127.0.0.1:8080"]
    data = raw_server_post(toolbox, name="bad", host_ports='["127.0.0.1:99999"]')
    page = admin_client.post(add, data).content.decode()
    assert "item 0: &#x27;127.0.0.1:99999&#x27;: the port must be between 1 and 65535" in page
    catalog = reverse("admin:toolboxes_catalogentry_add")
    assert 'name="host_ports"' in admin_client.get(catalog).content.decode()
