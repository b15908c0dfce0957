"""The authorization server with Django's test client: metadata, registration, consent,
code exchange with PKCE, refresh rotation, revocation, and every error as JSON."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from oauth2_provider.models import AccessToken, RefreshToken

from accounts.oauth_callers import token_caller, token_checksum
from accounts.oauth_models import OAuthGrant
from tests.accounts.oauth_client import BASE, REDIRECT_URI, RESOURCE, SignIn, query_of
from toolboxes import versions

pytestmark = pytest.mark.django_db
PRM = "/.well-known/oauth-protected-resource/mcp"
ELSEWHERE = "https://evil.example.com/mcp"


@pytest.fixture
def sign_in(as_user) -> SignIn:
    """Claude registered itself; `ada` (admin of acme) is logged in."""
    flow = SignIn(as_user("acme_admin"))
    assert flow.register().status_code == 201
    return flow


# --- discovery ----------------------------------------------------------------------------


def test_protected_resource_metadata_names_this_server():
    for path in (PRM, "/.well-known/oauth-protected-resource"):
        response = Client().get(path)
        assert response.status_code == 200
        metadata = ProtectedResourceMetadata.model_validate_json(response.content)
        assert str(metadata.resource) == RESOURCE
        assert [str(url) for url in metadata.authorization_servers] == [BASE]
        assert metadata.scopes_supported == ["mcp"]


def test_authorization_server_metadata():
    response = Client().get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    body = response.json()
    metadata = OAuthMetadata.model_validate(body)
    assert body["issuer"] == BASE
    assert str(metadata.authorization_endpoint) == BASE + "/oauth/authorize"
    assert str(metadata.token_endpoint) == BASE + "/oauth/token"
    assert str(metadata.registration_endpoint) == BASE + "/oauth/register"
    assert str(metadata.revocation_endpoint) == BASE + "/oauth/revoke"
    assert body["code_challenge_methods_supported"] == ["S256"]
    assert body["response_types_supported"] == ["code"]
    assert body["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert body["client_id_metadata_document_supported"] is True
    assert body["authorization_response_iss_parameter_supported"] is True


def test_public_url_is_what_metadata_advertises(settings):
    settings.WORKBENCH_PUBLIC_URL = "https://gw.example.com/mcp"
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "OIDC_ISS_ENDPOINT": "https://gw.example.com",
    }
    prm = Client().get("/.well-known/oauth-protected-resource/mcp").json()
    assert prm["resource"] == "https://gw.example.com/mcp"
    assert prm["authorization_servers"] == ["https://gw.example.com"]
    asm = Client().get("/.well-known/oauth-authorization-server").json()
    assert asm["issuer"] == "https://gw.example.com"
    assert asm["token_endpoint"] == "https://gw.example.com/oauth/token"


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server/mcp",
        "/mcp/.well-known/openid-configuration",
        "/oauth/nothing",
    ],
)
def test_probed_paths_answer_json_404(path):
    response = Client().get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": "not_found",
        "error_description": f"Nothing is served at {path}.",
    }


# --- registration -------------------------------------------------------------------------


def test_registration(db):
    flow = SignIn(Client())
    response = flow.register()
    assert response.status_code == 201
    body = response.json()
    assert body["redirect_uris"] == [REDIRECT_URI]
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    assert body["token_endpoint_auth_method"] == "none"


@pytest.mark.parametrize(
    ("metadata", "error", "description"),
    [
        (
            {"redirect_uris": ["http://evil.example.com/cb"]},
            "invalid_redirect_uri",
            "redirect URI 'http://evil.example.com/cb' is not allowed: use https "
            "(or http on a loopback address: localhost, 127.0.0.1, [::1])",
        ),
        (
            {"redirect_uris": ["https://claude.ai/cb#x"]},
            "invalid_redirect_uri",
            "redirect URI 'https://claude.ai/cb#x' must not have a fragment",
        ),
        (
            {"grant_types": ["client_credentials"]},
            "invalid_client_metadata",
            "grant_types: only authorization_code and refresh_token are supported, "
            "not client_credentials",
        ),
        (
            {"response_types": ["token"]},
            "invalid_client_metadata",
            "response_types: only code is supported",
        ),
    ],
)
def test_registration_refusals(db, metadata, error, description):
    response = SignIn(Client()).register(**metadata)
    assert response.status_code == 400
    assert response.json() == {"error": error, "error_description": description}


def test_https_and_loopback_redirects_register(db):
    for uri in (
        "https://claude.ai/api/mcp/auth_callback",
        "http://localhost:6274/cb",
        "http://[::1]:1/cb",
    ):
        assert SignIn(Client()).register(redirect_uris=[uri]).status_code == 201


def test_registration_can_be_turned_off(db, settings):
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "DCR_ENABLED": False}
    response = SignIn(Client()).register()
    assert response.status_code == 404
    assert response.json() == {"error": "not_found"}
    metadata = Client().get("/.well-known/oauth-authorization-server").json()
    assert "registration_endpoint" not in metadata


# --- authorization ------------------------------------------------------------------------


def test_login_first(db):
    flow = SignIn(Client())
    flow.register()
    response = flow.client.get(flow.authorize_url())
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=/oauth/authorize")


def test_consent_page_shows_client_host_and_tenants(sign_in, people, acme, globex):
    sign_in.client.force_login(people["mixed"])
    page = sign_in.client.get(sign_in.authorize_url())
    html = page.content.decode()
    assert page.status_code == 200
    assert page.context["client_name"] == "Claude"
    assert page.context["unverified"] is True
    assert page.context["redirect_host"] == "127.0.0.1:33418"
    assert "unverified: this client registered itself" in html
    tenants = dict(page.context["form"].fields["tenant"].choices)
    assert tenants == {acme.tenant.pk: "Acme Inc (acme)", globex.tenant.pk: "Globex Inc (globex)"}


def test_not_a_member_cannot_consent(sign_in, people):
    sign_in.client.force_login(people["operator"])
    page = sign_in.client.get(sign_in.authorize_url())
    assert page.context["refusal"] == (
        "You are not a member of any tenant: ask a tenant admin to add you."
    )
    assert 'id="consent"' not in page.content.decode()


def test_code_exchange_records_the_grant(sign_in, people, acme):
    tokens = sign_in.tokens(acme.tenant.pk, [acme.toolbox.pk])
    assert tokens["token_type"] == "Bearer"
    assert tokens["expires_in"] == 3600
    assert tokens["access_token"].startswith("wbo_")
    assert tokens["refresh_token"].startswith("wbr_")
    grant = OAuthGrant.objects.get()
    assert (grant.user, grant.tenant, grant.limited) == (people["acme_admin"], acme.tenant, True)
    caller = token_caller(token_checksum(tokens["access_token"]))
    assert (caller.grant_id, caller.tenant_id, caller.refusal) == (grant.pk, acme.tenant.pk, "")
    assert caller.toolboxes == frozenset({"acme-tools"})
    # Only hashes at rest.
    assert not AccessToken.objects.exclude(token="").exists()
    assert not RefreshToken.objects.exclude(token="").exists()


def test_deny_sends_access_denied(sign_in, acme):
    response = sign_in.consent(sign_in.authorize_url(), acme.tenant.pk, allow=False)
    query = query_of(response["Location"])
    assert (query["error"], query["state"]) == ("access_denied", sign_in.state)
    assert not OAuthGrant.objects.exists()


def test_toolboxes_of_another_tenant_are_refused(sign_in, people, acme, globex):
    sign_in.client.force_login(people["mixed"])
    response = sign_in.consent(sign_in.authorize_url(), acme.tenant.pk, [globex.toolbox.pk])
    assert response.status_code == 200
    assert response.context["form"].non_field_errors() == [
        "These toolboxes are not in the chosen tenant: globex-tools."
    ]
    assert not OAuthGrant.objects.exists()


def test_a_tenant_the_member_is_not_in_is_refused(sign_in, globex):
    response = sign_in.consent(sign_in.authorize_url(), globex.tenant.pk)
    assert response.status_code == 200
    assert "tenant" in response.context["form"].errors
    assert not OAuthGrant.objects.exists()


@pytest.mark.parametrize(
    ("resource", "description"),
    [
        (None, f"The resource parameter is required: use '{RESOURCE}'."),
        (
            "http://testserver/other",
            f"The resource 'http://testserver/other' is not served here: use '{RESOURCE}'.",
        ),
        (ELSEWHERE, f"The resource '{ELSEWHERE}' is not served here: use '{RESOURCE}'."),
    ],
)
def test_resource_is_required_and_checked(sign_in, resource, description):
    response = sign_in.client.get(sign_in.authorize_url(resource=resource))
    assert response.status_code == 302
    query = query_of(response["Location"])
    assert response["Location"].startswith(REDIRECT_URI)
    assert query == {
        "error": "invalid_target",
        "error_description": description,
        "state": sign_in.state,
    }


def test_unregistered_redirect_uri_is_json_and_not_followed(sign_in):
    response = sign_in.client.get(sign_in.authorize_url(redirect_uri="https://evil.example.com/cb"))
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "error_description": "Mismatching redirect URI.",
    }


def test_unknown_client_is_json(sign_in):
    response = sign_in.client.get(sign_in.authorize_url(client_id="nobody"))
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "error_description": "Invalid client_id parameter value.",
    }


@pytest.mark.parametrize(
    ("overrides", "description"),
    [
        ({"code_challenge": None, "code_challenge_method": None}, "Code challenge required."),
        ({"code_challenge_method": "plain"}, "The code_challenge_method must be S256."),
        ({"code_challenge_method": None}, "The code_challenge_method must be S256."),
    ],
)
def test_pkce_s256_is_required(sign_in, overrides, description):
    response = sign_in.client.get(sign_in.authorize_url(**overrides))
    query = query_of(response["Location"])
    assert (query["error"], query["error_description"]) == ("invalid_request", description)


# --- the token endpoint -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verifier", "status", "body"),
    [
        (None, 400, {"error": "invalid_request", "error_description": "Code verifier required."}),
        ("x" * 50, 400, {"error": "invalid_grant"}),
    ],
)
def test_pkce_verifier_wrong_or_missing(sign_in, acme, verifier, status, body):
    response = sign_in.exchange(sign_in.code(acme.tenant.pk), code_verifier=verifier)
    assert (response.status_code, response.json()) == (status, body)


def test_wrong_resource_at_the_token_endpoint(sign_in, acme):
    response = sign_in.exchange(sign_in.code(acme.tenant.pk), resource=ELSEWHERE)
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_target",
        "error_description": f"The requested resource '{ELSEWHERE}' is not allowed. Token "
        "request cannot escalate resource permissions beyond the original authorization grant",
    }


def test_code_used_twice(sign_in, acme):
    code = sign_in.code(acme.tenant.pk)
    assert sign_in.exchange(code).status_code == 200
    again = sign_in.exchange(code)
    assert (again.status_code, again.json()) == (400, {"error": "invalid_grant"})


def test_refresh_rotates(sign_in, acme):
    first = sign_in.tokens(acme.tenant.pk)
    response = sign_in.refresh(first["refresh_token"])
    assert response.status_code == 200, response.content
    second = response.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    grant = OAuthGrant.objects.get()
    assert token_caller(token_checksum(second["access_token"])).grant_id == grant.pk
    assert token_caller(token_checksum(first["access_token"])) is None  # rotated away
    replay = sign_in.refresh(first["refresh_token"])
    assert (replay.status_code, replay.json()) == (400, {"error": "invalid_grant"})
    # A replayed refresh token revokes its family: the newest one too.
    after = sign_in.refresh(second["refresh_token"])
    assert (after.status_code, after.json()) == (400, {"error": "invalid_grant"})


def test_revocation(sign_in, acme):
    tokens = sign_in.tokens(acme.tenant.pk)
    response = sign_in.client.post(
        "/oauth/revoke", {"token": tokens["access_token"], "client_id": sign_in.client_id}
    )
    assert response.status_code == 200
    assert token_caller(token_checksum(tokens["access_token"])) is None
    response = sign_in.client.post(
        "/oauth/revoke", {"token": tokens["refresh_token"], "client_id": sign_in.client_id}
    )
    assert response.status_code == 200
    refused = sign_in.refresh(tokens["refresh_token"])
    assert (refused.status_code, refused.json()) == (400, {"error": "invalid_grant"})


def test_a_deactivated_user_is_refused_and_the_gateway_told(
    sign_in, people, acme, django_capture_on_commit_callbacks
):
    tokens = sign_in.tokens(acme.tenant.pk)
    before = cache.get(versions.version_key(acme.tenant.pk))
    user = people["acme_admin"]
    user.is_active = False
    with django_capture_on_commit_callbacks(execute=True):
        user.save()
    assert cache.get(versions.version_key(acme.tenant.pk)) != before
    assert token_caller(token_checksum(tokens["access_token"])).refusal == "inactive_user"


def test_withdrawn_grant_and_removed_member(sign_in, people, acme):
    tokens = sign_in.tokens(acme.tenant.pk)
    checksum = token_checksum(tokens["access_token"])
    people["acme_admin"].memberships.get().delete()
    assert token_caller(checksum).refusal == "not_a_member"
    refused = sign_in.refresh(tokens["refresh_token"])
    assert (refused.status_code, refused.json()) == (400, {"error": "invalid_grant"})
    OAuthGrant.objects.get().revoke()
    assert token_caller(checksum) is None
    assert not AccessToken.objects.filter(scope="mcp").exists()  # (DCR's own token stays)
    assert not RefreshToken.objects.exists()
