"""A raw server's host ports through the API's configuration document (issue 31): like
the rest of how a raw server runs, operators set and see them; others see null, keep them
by sending it back, and are refused (403, nothing applied) when they change them."""

from __future__ import annotations

import copy

from tests.api.conftest import problem
from toolboxes.config_file import export_tenant

CONFIG = "/tenants/acme/config"
PORTS = ["127.0.0.1:8080"]


def servers(document):
    return document["toolboxes"]["acme-tools"]["mcpServers"]


def test_an_operator_sets_host_ports_and_only_operators_see_them(api, acme):
    operator = api("operator")
    document = copy.deepcopy(operator("GET", CONFIG).json())
    servers(document)["acme-time"]["hostPorts"] = PORTS
    plan = operator("PUT", CONFIG, document).json()
    assert plan["changed"] == [{"name": "acme-tools/acme-time", "fields": ["hostPorts"]}]
    acme.server.refresh_from_db()
    assert acme.server.host_ports == PORTS
    assert servers(operator("GET", CONFIG).json())["acme-time"]["hostPorts"] == PORTS
    for member in ("acme_admin", "acme_viewer"):
        seen = servers(api(member)("GET", CONFIG).json())["acme-time"]
        assert seen["hostPorts"] is None


def test_a_tenant_admin_keeps_them_with_null_and_may_not_change_them(api, acme):
    acme.server.host_ports = PORTS
    acme.server.save()
    client = api("acme_admin")
    got = client("GET", CONFIG)
    unchanged = client("PUT", CONFIG, got.json(), if_match=got["ETag"]).json()
    assert unchanged["changed"] == []
    before = export_tenant(acme.tenant)
    for ports in (["127.0.0.1:5433"], []):
        document = copy.deepcopy(got.json())
        servers(document)["acme-time"]["hostPorts"] = ports
        problem(
            client("PUT", CONFIG, document),
            403,
            "Only operators may make a raw server or change how one runs: "
            "acme-tools/acme-time. Tenant admins make servers from the catalog.",
        )
    assert export_tenant(acme.tenant) == before
