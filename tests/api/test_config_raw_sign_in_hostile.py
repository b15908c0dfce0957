"""Issue 31, finding 2: a tenant admin rewrites an operator-made server's sign-in. How a raw
server signs in (`auth`: mode, OAuth client, scopes) is an operator's field, as its URL and
headers are: null to tenant admins in the configuration document and the servers API,
kept when applied as null, and a change of it refused (403, nothing applied, a dry run
too)."""

from __future__ import annotations

import copy

import pytest

from tests.api.conftest import problem
from toolboxes.config_file import export_tenant
from toolboxes.models import AuthMode, Server

CONFIG = "/tenants/acme/config"
SERVERS = "/tenants/acme/toolboxes/acme-tools/servers"
REFUSED = (
    "Only operators may make a raw server or change how one runs: acme-tools/{name}. Tenant "
    "admins make servers from the catalog."
)
THEIRS = {
    "mode": "client_credentials",
    "clientId": "attacker-client",
    "clientSecret": "attacker-secret",
    "scopes": "admin:org",
}


@pytest.fixture
def vendor(acme):
    server = Server(
        toolbox=acme.toolbox,
        name="vendor",
        transport="streamable-http",
        url="https://vendor.example.com/mcp",
        auth=AuthMode.OAUTH_SHARED,
        oauth_client={"client_id": "cid-acme", "client_secret": "operator-client-secret"},
        position=2,
    )
    server.full_clean()
    server.save()
    return server


def attempts(servers: dict) -> list[tuple[str, dict]]:
    """Each rewrite the review tried, as (server, its new document)."""
    remote, vendor = servers["acme-remote"], servers["vendor"]
    no_sign_in = {key: value for key, value in vendor.items() if key != "auth"}
    return [
        ("acme-remote", {**remote, "headers": {}, "auth": THEIRS}),  # headers -> credentials
        ("vendor", {**vendor, "auth": THEIRS}),
        ("vendor", {**vendor, "auth": {"mode": "oauth_person"}}),  # shared -> per person
        ("vendor", no_sign_in),  # the sign-in dropped
    ]


def test_a_tenant_admin_may_not_rewrite_a_raw_servers_sign_in(api, acme, vendor):
    client = api("acme_admin")
    got = client("GET", CONFIG)
    servers = got.json()["toolboxes"]["acme-tools"]["mcpServers"]
    assert servers["vendor"]["auth"] is None  # not shown: an operator's field
    before = export_tenant(acme.tenant)
    for name, changed in attempts(servers):
        document = copy.deepcopy(got.json())
        document["toolboxes"]["acme-tools"]["mcpServers"][name] = changed
        for query in ("?dry_run=true", ""):
            response = client("PUT", CONFIG + query, document, if_match=got["ETag"])
            problem(response, 403, REFUSED.format(name=name))
    assert export_tenant(acme.tenant) == before
    unchanged = client("PUT", CONFIG, got.json(), if_match=got["ETag"]).json()
    assert (unchanged["applied"], unchanged["changed"]) == (False, [])  # null: kept


def test_an_operator_changes_it_and_the_plan_names_it(api, acme, vendor):
    client = api("operator")
    document = client("GET", CONFIG).json()
    document["toolboxes"]["acme-tools"]["mcpServers"]["vendor"]["auth"]["mode"] = "oauth_person"
    plan = client("PUT", CONFIG + "?dry_run=true", document).json()
    assert plan["changed"] == [{"name": "acme-tools/vendor", "fields": ["auth"]}]
    assert client("PUT", CONFIG, document).json()["applied"] is True
    vendor.refresh_from_db()
    assert vendor.auth == AuthMode.OAUTH_PERSON
    assert vendor.oauth_client_values()["client_secret"] == "operator-client-secret"


def test_the_servers_api_shows_it_to_operators_only_and_refuses_it_to_tenant_admins(
    api, acme, vendor
):
    path = SERVERS + "/vendor"
    assert api("acme_admin")("GET", path).json()["auth"] is None
    assert api("acme_viewer")("GET", path).json()["auth"] is None
    assert api("operator")("GET", path).json()["auth"] == {
        "mode": "oauth_shared",
        "client_id": "cid-acme",
        "client_secret_set": True,
        "scopes": "",
    }
    theirs = {"mode": "client_credentials", "client_id": "x", "client_secret": "y"}
    for name in ("vendor", "acme-remote"):
        problem(
            api("acme_admin")("PATCH", f"{SERVERS}/{name}", {"auth": theirs}),
            403,
            "Only operators may set auth: tenant admins make servers from the catalog.",
        )
    vendor.refresh_from_db()
    assert (vendor.auth, vendor.oauth_client_values()["client_id"]) == ("oauth_shared", "cid-acme")
    # An operator's change: a null client secret keeps the stored one.
    answer = api("operator")(
        "PATCH", path, {"auth": {"mode": "oauth_person", "client_id": "cid-2", "scopes": "r"}}
    )
    assert answer.status_code == 200, answer.content
    vendor.refresh_from_db()
    assert (vendor.auth, vendor.oauth_scopes) == ("oauth_person", "r")
    assert vendor.oauth_client_values() == {
        "client_id": "cid-2",
        "client_secret": "operator-client-secret",
    }
    assert "operator-client-secret" not in answer.content.decode()
