"""A server's network allowance: operators set it (on a server or a catalog entry), a
tenant admin can neither see nor post it, and it reaches the sandbox and the JSON."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from accounts.models import Membership
from mcp_gateway.database.reads import server_config
from tests.toolboxes.helpers import catalog_server_post
from toolboxes.config_file import export_server
from toolboxes.models import CatalogEntry, Server, Tenant, Toolbox
from toolboxes.validators import validate_egress_allow


@pytest.fixture
def toolbox(db):
    tenant = Tenant.objects.create(slug="acme")
    return Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("10.0.0.0/8", "must be a list of networks or host names"),
        ([3], "must be a list of networks or host names"),
        (
            ["10.0.0.0/8", "not a host!"],
            "item 1: 'not a host!' is neither a network (CIDR) nor a host name",
        ),
        (["10.0.0.300/8"], "item 0: '10.0.0.300/8' is neither a network (CIDR) nor a host name"),
    ],
)
def test_a_bad_allowance_is_refused_with_its_reason(value, message):
    with pytest.raises(ValidationError) as raised:
        validate_egress_allow(value)
    assert raised.value.messages == [message]


def test_networks_and_host_names_are_allowed():
    validate_egress_allow(["10.1.2.0/24", "fd00::/8", "db.internal", "registry.npmjs.org."])


def test_the_allowance_reaches_the_sandbox_and_the_export(toolbox):
    server = Server(
        toolbox=toolbox, name="db", command="/bin/true", egress_allow=["10.1.2.0/24", "db.internal"]
    )
    server.full_clean()
    server.save()
    assert server_config(server).sandbox.egress_allow == ("10.1.2.0/24", "db.internal")
    assert export_server(server)["egressAllow"] == ["10.1.2.0/24", "db.internal"]


def test_a_catalog_made_server_takes_the_entrys_allowance(toolbox):
    entry = CatalogEntry.objects.create(
        name="io.example/db", command="/bin/true", egress_allow=["10.9.0.0/16"]
    )
    server = Server(toolbox=toolbox, name="db", catalog_entry=entry)
    server.full_clean()
    server.save()
    assert server_config(server).sandbox.egress_allow == ("10.9.0.0/16",)
    own = Server(toolbox=toolbox, name="db2", catalog_entry=entry, egress_allow=["0.0.0.0/0"])
    with pytest.raises(ValidationError) as raised:
        own.full_clean()
    assert "egress_allow" in raised.value.message_dict


def test_a_tenant_admin_neither_sees_nor_sets_it(client, django_user_model, toolbox):
    user = django_user_model.objects.create_user("tam", password="pw-123456", is_staff=True)
    Membership.objects.create(user=user, tenant=toolbox.tenant, role="admin")
    client.force_login(user)
    entry = CatalogEntry.objects.create(name="io.example/t", command="/bin/true")
    add = reverse("admin:toolboxes_server_add")
    assert (
        'name="egress_allow"' not in client.get(f"{add}?catalog_entry={entry.pk}").content.decode()
    )
    # egress_allow is not a field of this form: ignored
    data = catalog_server_post(toolbox, entry, name="t", egress_allow='["127.0.0.0/8"]')
    response = client.post(add, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Server.objects.get(name="t").egress_allow == []


def test_an_operator_sets_it_on_the_server_form(admin_client, toolbox):
    server = Server.objects.create(toolbox=toolbox, name="raw", command="/bin/true")
    page = admin_client.get(reverse("admin:toolboxes_server_change", args=[server.pk]))
    assert 'name="egress_allow"' in page.content.decode()
