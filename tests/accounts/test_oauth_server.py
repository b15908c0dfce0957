"""The authorization server with Django's test client: metadata, registration, consent,
code exchange with PKCE, refresh rotation, revocation, and every error as JSON (or, for a
client nobody verified, as a page here: never a redirect to it)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from oauth2_provider.models import AccessToken, RefreshToken, get_application_model

from accounts.models import Membership, OAuthGrant
from accounts.oauth_callers import token_caller, token_checksum
from accounts.oauth_consent import NOT_SENT_BACK, VIEWER_ONLY
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


@pytest.fixture
def verified(as_user) -> SignIn:
    """A client an operator created in the admin (not self-registered); `ada` logged in."""
    application = get_application_model().objects.create(
        name="Operator's client",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris=REDIRECT_URI,
        client_secret="",
    )
    return SignIn(as_user("acme_admin"), client_id=application.client_id)


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


def test_consent_page_shows_client_host_and_the_tenants_it_administers(
    sign_in, people, acme, globex
):
    sign_in.client.force_login(people["mixed"])  # admin of acme, viewer of globex
    page = sign_in.client.get(sign_in.authorize_url())
    html = page.content.decode()
    assert page.status_code == 200
    assert page.context["client_name"] == "Claude"
    assert page.context["unverified"] is True
    assert page.context["redirect_host"] == "127.0.0.1:33418"
    assert "unverified: this client registered itself" in html
    tenants = dict(page.context["form"].fields["tenant"].choices)
    assert tenants == {acme.tenant.pk: "Acme Inc (acme)"}
    assert [tb for _, tb in page.context["form"].fields["toolboxes"].choices] == [
        "acme / acme-tools"
    ]
    assert (
        "Not listed: globex, where you are a viewer (only a tenant's admins may connect "
        "a client)." in html
    )


def test_a_viewer_cannot_consent(sign_in, people, acme):
    """The review's finding: a viewer completed the consent and ran use_tool."""
    sign_in.client.force_login(people["acme_viewer"])
    url = sign_in.authorize_url()
    page = sign_in.client.get(url)
    assert page.status_code == 200
    assert (
        page.context["refusal"]
        == VIEWER_ONLY
        == (
            "You are a viewer of your tenants: only a tenant's admins may connect a client, "
            "which runs the tenant's tools. Ask a tenant admin."
        )
    )
    assert 'id="consent"' not in page.content.decode()
    # Posting the form anyway (its hidden fields from the page) gets no code.
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields if form[name].is_hidden}
    response = sign_in.client.post(url, {**data, "tenant": str(acme.tenant.pk), "allow": "Allow"})
    assert response.status_code == 200
    assert response.context["form"].errors["tenant"] == [
        f"Select a valid choice. {acme.tenant.pk} is not one of the available choices."
    ]
    assert not OAuthGrant.objects.exists()


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
    Membership.objects.filter(user=people["mixed"], tenant=globex.tenant).update(role="admin")
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
def test_resource_is_required_and_checked(verified, resource, description):
    response = verified.client.get(verified.authorize_url(resource=resource))
    assert response.status_code == 302
    query = query_of(response["Location"])
    assert response["Location"].startswith(REDIRECT_URI)
    assert query == {
        "error": "invalid_target",
        "error_description": description,
        "state": verified.state,
    }


@pytest.mark.parametrize(
    ("overrides", "error", "description"),
    [
        (
            {"resource": None},
            "invalid_target",
            f"The resource parameter is required: use '{RESOURCE}'.",
        ),
        (
            {"resource": ELSEWHERE},
            "invalid_target",
            f"The resource '{ELSEWHERE}' is not served here: use '{RESOURCE}'.",
        ),
        (
            {"code_challenge_method": "plain"},
            "invalid_request",
            "The code_challenge_method must be S256.",
        ),
        ({"scope": "admin"}, "invalid_scope", None),
    ],
)
def test_an_unverified_clients_errors_stay_here(sign_in, overrides, error, description):
    """The review's finding: a self-registered client made /oauth/authorize an open
    redirector (an error went to its redirect URI without the consent page)."""
    response = sign_in.client.get(sign_in.authorize_url(**overrides))
    assert response.status_code == 400
    assert not response.has_header("Location")
    html = response.content.decode()
    assert f'<h2 id="error">{error}</h2>' in html
    if description is not None:
        assert response.context["error"].description == description
    assert (
        response.context["not_sent_back"]
        == NOT_SENT_BACK.format(host="127.0.0.1:33418")
        == (
            "Workbench did not send you back to 127.0.0.1:33418: the client registered itself "
            "and nobody has verified it."
        )
    )
    assert not OAuthGrant.objects.exists()


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
def test_pkce_s256_is_required(verified, overrides, description):
    response = verified.client.get(verified.authorize_url(**overrides))
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


def test_code_used_twice_revokes_what_it_produced(
    sign_in, acme, django_capture_on_commit_callbacks
):
    """The review's finding: the replay was refused but its first tokens kept working
    (RFC 6749 §4.1.2: revoke the tokens issued from a code used twice)."""
    code = sign_in.code(acme.tenant.pk)
    first = sign_in.exchange(code)
    assert first.status_code == 200
    tokens = first.json()
    checksum = token_checksum(tokens["access_token"])
    assert token_caller(checksum).refusal == ""
    before = cache.get(versions.version_key(acme.tenant.pk))
    with django_capture_on_commit_callbacks(execute=True):
        again = sign_in.exchange(code)
    assert (again.status_code, again.json()) == (400, {"error": "invalid_grant"})
    assert token_caller(checksum) is None  # deleted, and the gateway told:
    assert cache.get(versions.version_key(acme.tenant.pk)) != before
    assert OAuthGrant.objects.get().revoked_at is not None
    refused = sign_in.refresh(tokens["refresh_token"])
    assert (refused.status_code, refused.json()) == (400, {"error": "invalid_grant"})


def test_an_unexchanged_code_that_fails_revokes_nothing(sign_in, acme):
    code = sign_in.code(acme.tenant.pk)
    wrong = sign_in.exchange(code, code_verifier="x" * 50)
    assert (wrong.status_code, wrong.json()) == (400, {"error": "invalid_grant"})
    assert sign_in.exchange(code).status_code == 200
    assert OAuthGrant.objects.get().revoked_at is None


def test_a_code_exchanged_twice_at_once_revokes_the_grant(sign_in, acme):
    """Both exchanges passed validation; the second to delete the code finds it gone."""
    from oauth2_provider.models import get_grant_model
    from oauthlib.common import Request
    from oauthlib.oauth2.rfc6749.errors import InvalidGrantError

    from accounts.oauth_validator import GrantValidator

    code = sign_in.code(acme.tenant.pk)
    tokens = sign_in.exchange(code).json()
    row_client = get_application_model().objects.get(client_id=sign_in.client_id)
    request = Request("/oauth/token")
    request.client = row_client
    assert not get_grant_model().objects.filter(code=code).exists()
    with pytest.raises(InvalidGrantError):
        GrantValidator().invalidate_authorization_code(sign_in.client_id, code, request)
    assert token_caller(token_checksum(tokens["access_token"])) is None
    assert OAuthGrant.objects.get().revoked_at is not None


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


# --- viewers at /mcp ------------------------------------------------------------------------


def test_a_member_made_viewer_is_refused_until_made_admin_again(
    sign_in, people, acme, django_capture_on_commit_callbacks
):
    """The role is asked at each request (as membership is): a role change bumps the
    tenant's version, so every gateway asks again."""
    tokens = sign_in.tokens(acme.tenant.pk)
    checksum = token_checksum(tokens["access_token"])
    membership = Membership.objects.get(user=people["acme_admin"], tenant=acme.tenant)
    before = cache.get(versions.version_key(acme.tenant.pk))
    membership.role = "viewer"
    with django_capture_on_commit_callbacks(execute=True):
        membership.save()
    assert cache.get(versions.version_key(acme.tenant.pk)) != before
    assert token_caller(checksum).refusal == "viewer_role"
    refused = sign_in.refresh(tokens["refresh_token"])
    assert (refused.status_code, refused.json()) == (400, {"error": "invalid_grant"})
    membership.role = "admin"
    membership.save()
    assert token_caller(checksum).refusal == ""
    assert sign_in.refresh(tokens["refresh_token"]).status_code == 200


def test_a_viewers_code_is_not_exchanged(sign_in, people, acme):
    """Made a viewer between consent and exchange: no token."""
    code = sign_in.code(acme.tenant.pk)
    Membership.objects.filter(user=people["acme_admin"]).update(role="viewer")
    response = sign_in.exchange(code)
    assert (response.status_code, response.json()) == (400, {"error": "invalid_grant"})
    assert not AccessToken.objects.filter(scope="mcp").exists()


def test_operator_created_admin_of_two_tenants_sees_both(sign_in, acme, globex):
    both = User.objects.create_user("two", password="pw-two-12345", is_staff=True)
    for tenant in (acme.tenant, globex.tenant):
        Membership.objects.create(user=both, tenant=tenant, role="admin")
    sign_in.client.force_login(both)
    page = sign_in.client.get(sign_in.authorize_url())
    assert set(dict(page.context["form"].fields["tenant"].choices)) == {
        acme.tenant.pk,
        globex.tenant.pk,
    }
    assert page.context["viewer_of"] == []
