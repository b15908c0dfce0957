"""Issue 31, finding 9: another's object answers 404, exactly as a missing one, before any
permission is asked; 403 is for what the caller may see but not do. The review found a
foreign member's personal API token answering 403 to its delete page (and to a POST of
its form); the connected-accounts API answered 403 for a server of a tenant the calling
credential is narrowed away from."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import ApiToken
from tests.api.conftest import Api, problem
from toolboxes.models import AuthMode, Server

SHARED_BY_ADMINS = "Only the tenant's admins connect its shared account."


@pytest.mark.parametrize("who", ["acme_admin", "acme_viewer"])
def test_deleting_another_members_api_token_is_404(as_user, people, who):
    theirs, full = ApiToken.issue(people["globex_admin"], name="theirs")
    missing = theirs.pk + 100
    client = as_user(who)
    for object_id in (theirs.pk, missing):
        for view in ("delete", "change"):
            url = reverse(f"admin:accounts_apitoken_{view}", args=[object_id])
            assert client.get(url).status_code == 404, url
            assert client.post(url, {"post": "yes"}).status_code == 404, url
    assert ApiToken.objects.filter(pk=theirs.pk, revoked_at=None).exists()
    assert Api(full)("GET", "/me").status_code == 200
    # One's own token may be seen, not deleted (it is revoked): that is the 403.
    mine, _ = ApiToken.issue(people[who], name="mine")
    url = reverse("admin:accounts_apitoken_delete", args=[mine.pk])
    assert client.post(url, {"post": "yes"}).status_code == 403
    assert ApiToken.objects.filter(pk=mine.pk).exists()


def test_a_narrowed_credential_finds_no_server_of_another_tenant(people, acme, globex):
    """`mixed` administers acme and views globex: globex's shared account is refused to
    them (403), and missing (404) to their token narrowed to acme."""
    shared = Server(
        toolbox=globex.toolbox,
        name="bot",
        transport="streamable-http",
        url="https://bot.example.com/mcp",
        auth=AuthMode.OAUTH_SHARED,
        position=5,
    )
    shared.full_clean()
    shared.save()
    path = f"/me/connected-accounts/{shared.pk}"
    anywhere = Api(ApiToken.issue(people["mixed"], name="all")[1])
    problem(anywhere("POST", path + "/link"), 403, SHARED_BY_ADMINS)
    narrowed = Api(ApiToken.issue(people["mixed"], name="acme", tenant=acme.tenant)[1])
    missing = f"No server needing a sign-in '{shared.pk}'."
    problem(narrowed("POST", path + "/link"), 404, missing)
    problem(narrowed("DELETE", path), 404, missing)
