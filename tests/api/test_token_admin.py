"""Personal API tokens in the admin: a member makes one for themself, sees it once, sees
only their own, and revokes it; the API keys' hand-off never mixes a key and a token."""

from __future__ import annotations

import re

from django.contrib.admin.models import LogEntry
from django.urls import reverse

from accounts.admin.api_tokens import NEW_TOKEN_SESSION
from accounts.models import ApiToken
from tests.api.conftest import Api

TOKEN_RE = re.compile(r"wbp_[a-z0-9]{8}_[A-Za-z0-9_-]{43}")


def create(client, **fields):
    data = {"name": "deploys", "tenant": "", "expires_in_days": "30", **fields}
    return client.post(reverse("admin:accounts_apitoken_add"), data)


def test_a_member_makes_a_token_for_themself_and_sees_it_once(as_user, acme, people):
    client = as_user("acme_viewer")
    response = create(client, tenant=str(acme.tenant.pk), read_only="on")
    token = ApiToken.objects.get()
    handoff = reverse("admin:accounts_apitoken_handoff", args=[token.pk])
    assert response.status_code == 302 and response["Location"] == handoff
    assert not TOKEN_RE.search(str(client.session[NEW_TOKEN_SESSION]))  # held encrypted
    page = client.get(handoff)
    [full] = set(TOKEN_RE.findall(page.content.decode()))
    assert "Copy this API token now. It will not be shown again" in page.content.decode()
    assert "no-store" in page["Cache-Control"]
    assert (token.user, token.tenant, token.read_only) == (people["acme_viewer"], acme.tenant, True)
    assert Api(full)("GET", "/me").json()["username"] == "vic"
    again = client.get(handoff).content.decode()
    assert not TOKEN_RE.search(again) and "was shown once" in again


def test_a_token_is_never_taken_out_for_a_key_of_the_same_id(as_user, acme):
    client = as_user("acme_admin")
    create(client)
    token = ApiToken.objects.get()
    page = client.get(reverse("admin:toolboxes_apikey_handoff", args=[acme.api_key.pk]))
    assert not TOKEN_RE.search(page.content.decode())
    assert NEW_TOKEN_SESSION in client.session  # still waiting for the token's own page
    assert token.pk


def test_members_see_only_their_own_tokens(as_user, people):
    ApiToken.issue(people["acme_admin"], name="mine")
    theirs, _ = ApiToken.issue(people["globex_admin"], name="theirs")
    client = as_user("acme_admin")
    listing = client.get(reverse("admin:accounts_apitoken_changelist")).content.decode()
    assert "mine" in listing and "theirs" not in listing
    assert (
        client.get(reverse("admin:accounts_apitoken_change", args=[theirs.pk])).status_code == 404
    )
    assert (
        client.get(reverse("admin:accounts_apitoken_revoke", args=[theirs.pk])).status_code == 404
    )
    operator_list = as_user("operator").get(reverse("admin:accounts_apitoken_changelist"))
    assert "theirs" in operator_list.content.decode()


def test_revoking_a_token(as_user, people):
    token, full = ApiToken.issue(people["acme_admin"], name="mine")
    client = as_user("acme_admin")
    response = client.post(reverse("admin:accounts_apitoken_revoke", args=[token.pk]))
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.status == "revoked"
    assert Api(full)("GET", "/me").status_code == 401
    assert LogEntry.objects.get(object_id=str(token.pk)).change_message == "Revoked"
