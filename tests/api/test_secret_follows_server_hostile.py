"""Issue 31, finding 3: a kept secret follows a server to another catalog entry (or URL,
command, args, transport). A stored secret is kept (`null`, or a map left out) only while
the server stays where it was; moved, each value kept is a 422 naming the value to type
again, through `PATCH .../servers/{name}` and `PUT /config` (its dry run too: the plan a
pull request shows), and nothing changes."""

from __future__ import annotations

import copy

import pytest

from tests.api.conftest import SECRET, problem
from toolboxes.config_file import export_tenant
from toolboxes.models import CatalogEntry, CatalogParameter, Server

SERVERS = "/tenants/acme/toolboxes/acme-tools/servers"
CONFIG = "/tenants/acme/config"
VENDOR_A_SECRET = "vendor-a-token-never-elsewhere"
AGAIN = "must be typed again: a stored secret is not kept across a change of the server's {}"


def entry(name: str, url: str, *, secret: bool = True) -> CatalogEntry:
    made = CatalogEntry.objects.create(
        name=name,
        transport="streamable-http",
        url=url,
        headers={"Authorization": "Bearer {{token}}"},
    )
    CatalogParameter.objects.create(entry=made, name="token", required=True, secret=secret)
    CatalogParameter.objects.create(entry=made, name="host", default="vendor-a.example.com")
    CatalogParameter.objects.create(entry=made, name="team", position=2)
    return made


@pytest.fixture
def va(acme):
    """Vendor A's server: its token goes to https://{{host}}/mcp (vendor A's host)."""
    entry("rt/vendor-a", "https://{{host}}/mcp")
    entry("rt/vendor-b", "https://vendor-b.example.com/mcp")
    entry("rt/vendor-c", "https://vendor-c.example.com/mcp", secret=False)  # token shown
    server = Server(
        toolbox=acme.toolbox,
        name="va",
        catalog_entry=CatalogEntry.objects.get(name="rt/vendor-a"),
        parameters={"token": VENDOR_A_SECRET, "team": "blue"},
        position=2,
    )
    server.full_clean()
    server.save()
    return server


def refused(response, field: str, what: str) -> None:
    body = problem(response, 422, "1 invalid field.")
    assert body["errors"] == [{"field": field, "message": AGAIN.format(what)}]


@pytest.mark.parametrize(
    ("change", "what"),
    [
        ({"catalog": "rt/vendor-b", "parameters": {"token": None}}, "catalog entry"),
        ({"catalog": "rt/vendor-b"}, "catalog entry"),  # the parameters left out: kept too
        ({"catalog": "rt/vendor-c", "parameters": {"token": None}}, "catalog entry"),
        ({"parameters": {"token": None, "host": "attacker.example"}}, "URL"),
    ],
)
def test_patch_never_moves_a_secret_parameter(api, acme, va, change, what):
    before = export_tenant(acme.tenant)
    for who in ("acme_admin", "operator"):
        response = api(who)("PATCH", SERVERS + "/va", change)
        assert VENDOR_A_SECRET not in response.content.decode()
        refused(response, "parameters.token", what)
    assert export_tenant(acme.tenant) == before


def test_patch_keeps_a_secret_where_the_server_stays_and_takes_one_typed_again(api, va):
    client = api("acme_admin")
    kept = client("PATCH", SERVERS + "/va", {"parameters": {"token": None, "team": "red"}})
    assert kept.status_code == 200, kept.content
    va.refresh_from_db()
    assert (va.secret_parameters, va.parameters) == (
        {"token": VENDOR_A_SECRET},
        {"team": "red"},
    )
    moved = client(
        "PATCH", SERVERS + "/va", {"catalog": "rt/vendor-b", "parameters": {"token": "for-b"}}
    )
    assert moved.status_code == 200, moved.content
    va.refresh_from_db()
    assert (va.catalog_entry.name, va.secret_parameters) == ("rt/vendor-b", {"token": "for-b"})


@pytest.mark.parametrize(
    ("server", "change", "field", "what"),
    [
        ("acme-remote", {"url": "https://attacker.example/mcp"}, "headers.Authorization", "URL"),
        (
            "acme-remote",
            {"url": "https://attacker.example/mcp", "headers": {"Authorization": None}},
            "headers.Authorization",
            "URL",
        ),
        ("acme-remote", {"transport": "sse"}, "headers.Authorization", "transport"),
        ("acme-time", {"command": "/bin/sh"}, "env.TOKEN", "command"),
        ("acme-time", {"args": ["-c", "env"], "env": {"TOKEN": None}}, "env.TOKEN", "args"),
    ],
)
def test_patch_of_a_raw_server_never_moves_its_secrets(api, acme, server, change, field, what):
    before = export_tenant(acme.tenant)
    refused(api("operator")("PATCH", f"{SERVERS}/{server}", change), field, what)
    assert export_tenant(acme.tenant) == before
    typed = {"headers": {"Authorization": "Bearer new"}} if field.startswith("h") else {"env": {}}
    answer = api("operator")("PATCH", f"{SERVERS}/{server}", {**change, **typed})
    assert answer.status_code == 200, answer.content


def test_a_pull_request_never_moves_a_secret_through_the_configuration(api, acme, va):
    """The README's GitOps flow: the document in git has every secret as null; a pull
    request that points a server elsewhere is refused at its plan, and at its merge."""
    client = api("acme_admin")
    got = client("GET", CONFIG)
    before = export_tenant(acme.tenant)
    document = copy.deepcopy(got.json())
    server = document["toolboxes"]["acme-tools"]["mcpServers"]["va"]
    assert server["parameters"]["token"] is None
    for change, what in (
        ({"catalog": "rt/vendor-b"}, "catalog entry"),
        ({"catalog": "rt/vendor-c"}, "catalog entry"),
        ({"parameters": {**server["parameters"], "host": "attacker.example"}}, "URL"),
    ):
        attempt = copy.deepcopy(document)
        attempt["toolboxes"]["acme-tools"]["mcpServers"]["va"].update(change)
        for query in ("?dry_run=true", ""):
            body = problem(
                client("PUT", CONFIG + query, attempt, if_match=got["ETag"]),
                422,
                "The configuration is not valid.",
            )
            assert body["errors"] == [
                {
                    "field": "toolboxes.acme-tools.mcpServers.va.parameters.token",
                    "message": AGAIN.format(what),
                }
            ]
    assert export_tenant(acme.tenant) == before
    # The same change with the secret typed again is applied.
    attempt = copy.deepcopy(document)
    attempt["toolboxes"]["acme-tools"]["mcpServers"]["va"].update(
        {"catalog": "rt/vendor-b", "parameters": {"token": "for-b", "team": "blue"}}
    )
    assert client("PUT", CONFIG, attempt).json()["applied"] is True
    va.refresh_from_db()
    assert (va.catalog_entry.name, va.secret_parameters) == ("rt/vendor-b", {"token": "for-b"})


def test_an_operators_document_never_moves_a_raw_servers_secrets(api, acme):
    client = api("operator")
    got = client("GET", CONFIG).json()
    before = export_tenant(acme.tenant)
    for name, change, path, what in (
        ("acme-remote", {"url": "https://attacker.example/mcp"}, "headers.Authorization", "URL"),
        ("acme-remote", {"type": "sse"}, "headers.Authorization", "transport"),
        ("acme-time", {"command": "/bin/sh"}, "env.TOKEN", "command"),
        ("acme-time", {"args": ["-c", "env"]}, "env.TOKEN", "args"),
    ):
        attempt = copy.deepcopy(got)
        attempt["toolboxes"]["acme-tools"]["mcpServers"][name].update(change)
        body = problem(client("PUT", CONFIG, attempt), 422, "The configuration is not valid.")
        assert body["errors"] == [
            {
                "field": f"toolboxes.acme-tools.mcpServers.{name}.{path}",
                "message": AGAIN.format(what),
            }
        ]
    assert export_tenant(acme.tenant) == before
    assert acme.server.env == {"TOKEN": SECRET}


def test_a_client_secret_never_follows_a_server_to_a_new_url(api, acme):
    vendor = Server(
        toolbox=acme.toolbox,
        name="vendor",
        transport="streamable-http",
        url="https://vendor.example.com/mcp",
        auth="oauth_shared",
        oauth_client={"client_id": "cid", "client_secret": "client-secret-of-vendor"},
        position=2,
    )
    vendor.full_clean()
    vendor.save()
    client = api("operator")
    document = client("GET", CONFIG).json()
    document["toolboxes"]["acme-tools"]["mcpServers"]["vendor"]["url"] = "https://evil.example/"
    body = problem(client("PUT", CONFIG, document), 422, "The configuration is not valid.")
    assert body["errors"] == [
        {
            "field": "toolboxes.acme-tools.mcpServers.vendor.auth.clientSecret",
            "message": AGAIN.format("URL"),
        }
    ]
    refused(
        client("PATCH", SERVERS + "/vendor", {"url": "https://evil.example/"}),
        "auth.client_secret",
        "URL",
    )
    vendor.refresh_from_db()
    assert vendor.url == "https://vendor.example.com/mcp"
