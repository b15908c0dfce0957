"""Connected accounts through the API: the caller's own list (theirs, and for a tenant's
admins the shared ones), a one-time link to connect, a disconnect recorded in the history;
never a token in an answer."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import DELETION, LogEntry

from accounts.models import ApiToken
from connections import store
from connections.models import SignIn
from tests.api.conftest import Api, problem
from toolboxes.models import AuthMode, Server

pytestmark = pytest.mark.django_db
ACCESS_TOKEN = "vendor-access-token-never-shown"


def vendor_server(toolbox, name: str, auth: str) -> Server:
    server = Server(
        toolbox=toolbox,
        name=name,
        transport="streamable-http",
        url=f"https://{name}.example.com/mcp",
        auth=auth,
        position=5,
    )
    server.full_clean()
    server.save()
    return server


@pytest.fixture
def vendors(acme, globex, people):
    servers = {
        "github": vendor_server(acme.toolbox, "github", AuthMode.OAUTH_PERSON),
        "bot": vendor_server(acme.toolbox, "bot", AuthMode.OAUTH_SHARED),
        "jira": vendor_server(globex.toolbox, "jira", AuthMode.OAUTH_PERSON),
    }
    tokens = {"access_token": ACCESS_TOKEN, "refresh_token": "r"}
    store.save_sign_in(servers["github"], people["acme_admin"].pk, tokens, "ada-at-github")
    return servers


def listed(api, who: str) -> dict[str, dict]:
    response = api(who)("GET", "/me/connected-accounts")
    assert response.status_code == 200, response.content
    assert ACCESS_TOKEN not in response.content.decode()
    return {row["server"]: row for row in response.json()}


def test_each_person_lists_their_own_and_admins_the_shared(api, vendors):
    ada = listed(api, "acme_admin")
    assert set(ada) == {"github", "bot"}
    assert ada["github"] | {"connected_at": None} == {
        "server_id": vendors["github"].pk,
        "tenant": "acme",
        "toolbox": "acme-tools",
        "server": "github",
        "shared": False,
        "status": "connected",
        "account": "ada-at-github",
        "connected_at": None,
    }
    assert ada["github"]["connected_at"]
    assert (ada["bot"]["shared"], ada["bot"]["status"]) == (True, "not_connected")
    assert {name: row["status"] for name, row in listed(api, "acme_viewer").items()} == {
        "github": "not_connected"  # a viewer: their own only, and never the shared one
    }
    assert set(listed(api, "mixed")) == {"github", "bot", "jira"}
    assert set(listed(api, "globex_admin")) == {"jira"}


def test_a_link_to_connect_is_the_callers_own(api, vendors):
    made = api("acme_viewer")("POST", f"/me/connected-accounts/{vendors['github'].pk}/link")
    assert made.status_code == 201, made.content
    url = made.json()["connect_url"]
    assert "/connections/connect/" in url
    link = store.find_link(url.rstrip("/").rsplit("/", 1)[1])
    assert link is not None and link.server_id == vendors["github"].pk
    shared = api("acme_viewer")("POST", f"/me/connected-accounts/{vendors['bot'].pk}/link")
    problem(shared, 403, "Only the tenant's admins connect its shared account.")
    foreign = api("globex_admin")("POST", f"/me/connected-accounts/{vendors['github'].pk}/link")
    problem(foreign, 404, f"No server needing a sign-in '{vendors['github'].pk}'.")


def test_disconnect_deletes_records_and_is_idempotent(api, vendors, people):
    path = f"/me/connected-accounts/{vendors['github'].pk}"
    assert api("acme_admin")("DELETE", path).status_code == 204
    assert not SignIn.objects.filter(server=vendors["github"]).exists()
    entry = LogEntry.objects.get(action_flag=DELETION)
    assert entry.user == people["acme_admin"]
    assert entry.change_message.startswith("Disconnected (API token ")
    assert api("acme_admin")("DELETE", path).status_code == 204  # nothing left to disconnect
    assert LogEntry.objects.filter(action_flag=DELETION).count() == 1


def test_a_read_only_token_lists_but_does_not_disconnect(vendors, people):
    _, token = ApiToken.issue(people["acme_admin"], name="ro", read_only=True)
    reader = Api(token)
    assert reader("GET", "/me/connected-accounts").status_code == 200
    path = f"/me/connected-accounts/{vendors['github'].pk}"
    problem(reader("DELETE", path), 403, "This API token is read-only.")
    assert SignIn.objects.filter(server=vendors["github"]).exists()


def test_a_token_narrowed_to_a_tenant_sees_only_it(vendors, people, acme):
    _, token = ApiToken.issue(people["mixed"], name="acme only", tenant=acme.tenant)
    rows = Api(token)("GET", "/me/connected-accounts").json()
    assert {row["tenant"] for row in rows} == {"acme"}
