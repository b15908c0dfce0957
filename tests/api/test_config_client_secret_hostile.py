"""Issue 31, finding 1: a remote server's OAuth client secret read through
`GET /tenants/{slug}/config`. It is write-only there for everyone (operators read its name
as null, like env and header values; the sign-in is an operator's field, null to others),
and a `null` applied keeps it. Only `export_config`, the operator's decrypted backup,
writes it."""

from __future__ import annotations

import copy
import json
from io import StringIO

import pytest
from django.core.management import call_command

from accounts.models import ApiToken
from tests.api.conftest import Api, problem
from toolboxes.models import AuthMode, Server

CLIENT_SECRET = "TOP-SECRET-CLIENT-SECRET-{slug}"


def signed_in(objects) -> Server:
    """A remote server signing in with an admin-entered OAuth client, as an operator makes it."""
    slug = objects.tenant.slug
    server = Server(
        toolbox=objects.toolbox,
        name="vendor",
        transport="streamable-http",
        url="https://vendor.example.com/mcp",
        auth=AuthMode.OAUTH_SHARED,
        oauth_client={"client_id": f"cid-{slug}", "client_secret": CLIENT_SECRET.format(slug=slug)},
        oauth_scopes="read",
        position=2,
    )
    server.full_clean()
    server.save()
    return server


@pytest.fixture
def vendors(acme, globex, people):
    return {"acme": signed_in(acme), "globex": signed_in(globex)}


def readers(people, acme, globex) -> dict[str, tuple[str, str]]:
    """Each way of reading a tenant's configuration the review tried: token -> tenant."""
    issue = ApiToken.issue
    return {
        "viewer": (issue(people["acme_viewer"], name="v")[1], "acme"),
        "admin, read-only": (issue(people["acme_admin"], name="ro", read_only=True)[1], "acme"),
        "narrowed to where a viewer": (
            issue(people["mixed"], name="n", tenant=globex.tenant)[1],
            "globex",
        ),
        "tenant admin": (issue(people["acme_admin"], name="a")[1], "acme"),
        "operator": (issue(people["operator"], name="o")[1], "acme"),
        "operator, read-only": (issue(people["operator"], name="o-ro", read_only=True)[1], "acme"),
    }


def test_no_reader_of_the_configuration_sees_the_client_secret(people, acme, globex, vendors):
    for who, (token, slug) in readers(people, acme, globex).items():
        response = Api(token)("GET", f"/tenants/{slug}/config")
        assert response.status_code == 200, (who, response.content)
        text = response.content.decode()
        assert "TOP-SECRET-CLIENT-SECRET" not in text, who
        server = response.json()["toolboxes"][f"{slug}-tools"]["mcpServers"]["vendor"]
        if who.startswith("operator"):
            assert server["auth"] == {
                "mode": "oauth_shared",
                "clientId": f"cid-{slug}",
                "clientSecret": None,
                "scopes": "read",
            }, who
        else:  # how a raw server signs in is an operator's, as its URL and headers are
            assert (server["auth"], server["url"]) == (None, None), who


def test_a_null_client_secret_applied_keeps_the_stored_one(api, acme, vendors):
    client = api("operator")
    got = client("GET", "/tenants/acme/config")
    document = copy.deepcopy(got.json())
    vendor = document["toolboxes"]["acme-tools"]["mcpServers"]["vendor"]
    unchanged = client("PUT", "/tenants/acme/config", document, if_match=got["ETag"]).json()
    assert (unchanged["applied"], unchanged["changed"]) == (False, [])
    vendor["auth"]["scopes"] = "read write"
    plan = client("PUT", "/tenants/acme/config", document).json()
    assert plan["changed"] == [{"name": "acme-tools/vendor", "fields": ["auth"]}]
    vendors["acme"].refresh_from_db()
    assert vendors["acme"].oauth_client_values() == {
        "client_id": "cid-acme",
        "client_secret": "TOP-SECRET-CLIENT-SECRET-acme",
    }
    assert vendors["acme"].oauth_scopes == "read write"
    # A new server's null has nothing to keep.
    document["toolboxes"]["acme-tools"]["mcpServers"]["copy"] = copy.deepcopy(vendor)
    body = problem(
        client("PUT", "/tenants/acme/config", document), 422, "The configuration is not valid."
    )
    assert body["errors"] == [
        {
            "field": "toolboxes.acme-tools.mcpServers.copy.auth.clientSecret",
            "message": "has no stored value to keep",
        }
    ]


def test_export_config_is_the_operators_decrypted_backup(acme, vendors):
    """The command (run by whoever holds the deployment) still writes the secret in clear."""
    out = StringIO()
    call_command("export_config", "--tenant", "acme", stdout=out)
    auth = json.loads(out.getvalue())["toolboxes"]["acme-tools"]["mcpServers"]["vendor"]["auth"]
    assert auth["clientSecret"] == "TOP-SECRET-CLIENT-SECRET-acme"
