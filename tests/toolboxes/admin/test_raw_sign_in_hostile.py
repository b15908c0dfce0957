"""Issue 31, finding 2 in the admin (where it already held; kept so): how an operator's raw
server signs in is not on a tenant admin's form, and posting it changes nothing."""

from __future__ import annotations

import json

from django.urls import reverse

from tests.accounts.conftest import acme, as_user, globex, people  # noqa: F401
from toolboxes.models import AuthMode, Server

CLIENT_SECRET = "operator-client-secret"


def test_a_tenant_admin_neither_sees_nor_sets_a_raw_servers_sign_in(as_user, acme):  # noqa: F811
    server = Server(
        toolbox=acme.toolbox,
        name="vendor",
        transport="streamable-http",
        url="https://vendor.example.com/mcp",
        auth=AuthMode.OAUTH_SHARED,
        oauth_client={"client_id": "cid-acme", "client_secret": CLIENT_SECRET},
        position=2,
    )
    server.full_clean()
    server.save()
    client = as_user("acme_admin")
    url = reverse("admin:toolboxes_server_change", args=[server.pk])
    page = client.get(url).content.decode()
    for shown in ('name="auth"', "oauth_client", "cid-acme", CLIENT_SECRET, "vendor.example.com"):
        assert shown not in page, shown
    theirs = {
        "toolbox": acme.toolbox.pk,
        "name": "vendor",
        "position": "2",
        "enabled": "on",
        "tool_filters": '["*"]',
        "timeout": "30",
        "auth": "client_credentials",
        "oauth_client": json.dumps({"client_id": "theirs", "client_secret": "theirs"}),
        "oauth_scopes": "admin:org",
    }
    response = client.post(url, theirs)
    assert response.status_code == 302, response.context["adminform"].form.errors
    server.refresh_from_db()
    assert server.timeout == 30  # what the form has is saved, the rest is not its to set
    assert (server.auth, server.oauth_scopes) == (AuthMode.OAUTH_SHARED, "")
    assert server.oauth_client_values() == {"client_id": "cid-acme", "client_secret": CLIENT_SECRET}
