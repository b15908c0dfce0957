"""OAuth sign-ins in the admin: own ones for every member, the tenant's for its admins,
404 for anyone else's; revoking one ends its tokens."""

from __future__ import annotations

import pytest
from django.urls import reverse
from oauth2_provider.models import Application

from accounts.key_refusals import AuthError, key_from_headers
from accounts.models import OAuthGrant
from mcp_gateway.front.auth import challenge
from mcp_gateway.front.hostcheck import HostCheck

pytestmark = pytest.mark.django_db


@pytest.fixture
def grants(people, acme, globex) -> dict[str, OAuthGrant]:
    client = Application.objects.create(
        name="Claude",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="https://claude.ai/cb",
        registration_source="dcr",
    )
    made = {}
    for who, tenant in [("acme_admin", acme), ("acme_viewer", acme), ("globex_admin", globex)]:
        made[who] = OAuthGrant.objects.create(
            user=people[who], tenant=tenant.tenant, application=client
        )
    return made


def listed(client) -> set[int]:
    response = client.get(reverse("admin:accounts_oauthgrant_changelist"))
    assert response.status_code == 200
    return {grant.pk for grant in response.context["cl"].result_list}


def test_who_sees_which(as_user, grants):
    pk = {who: grant.pk for who, grant in grants.items()}
    assert listed(as_user("acme_viewer")) == {pk["acme_viewer"]}
    assert listed(as_user("acme_admin")) == {pk["acme_admin"], pk["acme_viewer"]}
    assert listed(as_user("operator")) == set(pk.values())
    other = reverse("admin:accounts_oauthgrant_change", args=[pk["acme_admin"]])
    assert as_user("acme_viewer").get(other).status_code == 404
    assert as_user("globex_admin").get(other).status_code == 404
    page = as_user("acme_viewer").get(
        reverse("admin:accounts_oauthgrant_change", args=[pk["acme_viewer"]])
    )
    assert page.status_code == 200
    assert "Claude (unverified)" in page.content.decode()


def test_a_member_revokes_its_own(as_user, grants):
    viewer = as_user("acme_viewer")
    own = reverse("admin:accounts_oauthgrant_revoke", args=[grants["acme_viewer"].pk])
    assert viewer.post(own).status_code == 302
    grants["acme_viewer"].refresh_from_db()
    assert grants["acme_viewer"].revoked_at is not None
    others = reverse("admin:accounts_oauthgrant_revoke", args=[grants["acme_admin"].pk])
    assert viewer.post(others).status_code == 404


def test_a_tenant_admin_revokes_the_tenants(as_user, grants):
    response = as_user("acme_admin").post(
        reverse("admin:accounts_oauthgrant_changelist"),
        {
            "action": "revoke_grants",
            "_selected_action": [grants[who].pk for who in grants],
        },
    )
    assert response.status_code == 302
    revoked = set(OAuthGrant.objects.filter(revoked_at__isnull=False).values_list("pk", flat=True))
    assert revoked == {grants["acme_admin"].pk, grants["acme_viewer"].pk}


def test_the_401_challenge_follows_the_public_url(settings):
    scope = {"headers": [(b"host", b"10.0.0.5:8000")], "scheme": "http"}
    hosts = HostCheck(["10.0.0.5"])  # an allowed Host is named back; a foreign one never
    with pytest.raises(AuthError) as missing_error:
        key_from_headers({})
    missing = missing_error.value
    assert challenge(scope, missing, hosts) == (
        b'Bearer resource_metadata="http://10.0.0.5:8000/.well-known/oauth-protected-resource/mcp"'
    )
    settings.WORKBENCH_PUBLIC_URL = "https://gw.example.com/mcp"
    expired = AuthError("expired_token", "The access token has expired.", invite_sign_in=True)
    assert challenge(scope, expired, hosts) == (
        b'Bearer error="invalid_token", error_description="The access token has expired.", '
        b'resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource/mcp"'
    )
    # A refused API key is told why, and not invited to sign in instead.
    wrong = AuthError("invalid_api_key", "The API key is not valid.")
    assert challenge(scope, wrong, hosts) == (
        b'Bearer error="invalid_token", error_description="The API key is not valid."'
    )
