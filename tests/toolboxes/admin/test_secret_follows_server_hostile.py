"""Issue 31, finding 3 in the admin's server form: a stored secret kept (left empty, or
posted back as the mask) while the server moves elsewhere (its URL, through a parameter or
its own field; its catalog entry) is never saved there: the form names the value to type
again, and nothing is saved."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from kernel.masking import MASK
from tests.accounts.conftest import acme, as_user, globex, people  # noqa: F401
from tests.toolboxes.helpers import catalog_server_post, server_change_post
from toolboxes.models import AuthMode, CatalogEntry, CatalogParameter, Server

TOKEN = "vendor-token-stays-home"
AGAIN = "must be typed again: a stored secret is not kept across a change of the server's"


def change_url(server: Server) -> str:
    return reverse("admin:toolboxes_server_change", args=[server.pk])


@pytest.fixture
def vendor(acme):  # noqa: F811
    """A catalog server whose token is sent to https://{{host}}/mcp."""
    entry = CatalogEntry.objects.create(
        name="rt/vendor",
        transport="streamable-http",
        url="https://{{host}}/mcp",
        headers={"Authorization": "Bearer {{token}}"},
    )
    CatalogParameter.objects.create(entry=entry, name="host", default="vendor.example.com")
    CatalogParameter.objects.create(entry=entry, name="token", secret=True, position=1)
    CatalogParameter.objects.create(entry=entry, name="team", position=2)
    server = Server(
        toolbox=acme.toolbox,
        name="vendor",
        catalog_entry=entry,
        parameters={"token": TOKEN},
        position=2,
    )
    server.full_clean()
    server.save()
    return server


def posted(server: Server, **values: str) -> dict:
    fields = {f"parameter_values__{name}": value for name, value in values.items()}
    return catalog_server_post(server.toolbox, server.catalog_entry, name=server.name, **fields)


def test_a_parameter_that_moves_the_url_asks_for_the_secret_again(as_user, vendor):  # noqa: F811
    client = as_user("acme_admin")
    response = client.post(change_url(vendor), posted(vendor, host="attacker.example", token=""))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors == {"parameter_values": [f"'token' {AGAIN} URL."]}
    assert TOKEN not in response.content.decode()
    vendor.refresh_from_db()
    assert (vendor.parameters, vendor.secret_parameters) == ({}, {"token": TOKEN})
    # Where it stays, a stored secret left empty is kept; typed again, it moves.
    kept = client.post(change_url(vendor), posted(vendor, team="red", token=""))
    assert kept.status_code == 302
    moved = client.post(change_url(vendor), posted(vendor, host="new.example", token="t2"))
    assert moved.status_code == 302
    vendor.refresh_from_db()
    assert vendor.parameters == {"host": "new.example"}
    assert vendor.secret_parameters == {"token": "t2"}


def test_a_new_entry_starts_without_the_stored_secret(as_user, vendor):  # noqa: F811
    other = CatalogEntry.objects.create(
        name="rt/other",
        transport="streamable-http",
        url="https://other.example.com/mcp",
        headers={"Authorization": "Bearer {{token}}"},
    )
    CatalogParameter.objects.create(entry=other, name="token", secret=True)
    data = catalog_server_post(vendor.toolbox, other, name="vendor", parameter_values__token="")
    assert as_user("acme_admin").post(change_url(vendor), data).status_code == 302
    vendor.refresh_from_db()
    assert (vendor.catalog_entry, vendor.secret_parameters) == (other, {})


def test_an_oauth_client_secret_never_follows_a_new_url(as_user, acme):  # noqa: F811
    server = Server(
        toolbox=acme.toolbox,
        name="oauth",
        transport="streamable-http",
        url="https://vendor.example.com/mcp",
        auth=AuthMode.OAUTH_SHARED,
        oauth_client={"client_id": "cid", "client_secret": "client-secret-stays"},
        position=3,
    )
    server.full_clean()
    server.save()
    data = server_change_post(
        server,
        url="https://attacker.example/mcp",
        auth="oauth_shared",
        oauth_client=json.dumps({"client_id": MASK, "client_secret": MASK}),
        oauth_scopes="",
    )
    response = as_user("operator").post(change_url(server), data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "oauth_client": [f"'client_id' {AGAIN} URL.", f"'client_secret' {AGAIN} URL."]
    }
    server.refresh_from_db()
    assert server.url == "https://vendor.example.com/mcp"
    retyped = {**data, "oauth_client": json.dumps({"client_id": "cid", "client_secret": "new"})}
    assert as_user("operator").post(change_url(server), retyped).status_code == 302
    server.refresh_from_db()
    assert server.oauth_client_values() == {"client_id": "cid", "client_secret": "new"}
