"""What keeps self-registered OAuth clients from piling up: a registration that carries a
credential is refused, saying why /mcp refuses the key (the answer an OAuth client given a
refused key, such as mcp-remote, shows), and a self-registered client that no member
consented to within WORKBENCH_OAUTH_UNUSED_CLIENT_SECONDS is deleted at the next
registration."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_application_model

from accounts.models import Membership, OAuthGrant
from tests.accounts.oauth_client import SignIn
from toolboxes.models import ApiKey

pytestmark = pytest.mark.django_db
Application = get_application_model()

NOT_FOR_KEYS = (
    "A client that sends an API key does not register for OAuth: fix or replace the key, "
    "or remove the header to sign in with OAuth instead."
)
CARRIES_CREDENTIAL = (
    "This registration request carries a credential (Authorization: Bearer or X-API-Key)."
)


def register_with(headers: dict[str, str]):
    return SignIn(Client(headers=headers)).register()


def assert_refused(response, reason: str) -> None:
    description = f"{reason} {NOT_FOR_KEYS}"
    assert response.status_code == 401
    assert response.json() == {"error": "invalid_token", "error_description": description}
    assert response["WWW-Authenticate"] == (
        f'Bearer error="invalid_token", error_description="{description}"'
    )
    assert not Application.objects.exists()


def forged(key: str) -> str:
    return key[:-4] + ("aaaa" if not key.endswith("aaaa") else "bbbb")


@pytest.fixture
def key(acme) -> tuple[ApiKey, str]:
    return ApiKey.issue(acme.tenant, label="for a client")


@pytest.mark.parametrize("header", ["Authorization", "X-API-Key"])
def test_a_key_that_is_not_valid(key, header):
    value = forged(key[1])
    response = register_with({header: f"Bearer {value}" if header == "Authorization" else value})
    assert_refused(response, "The API key is not valid.")


def test_a_revoked_key(key):
    api_key, full_key = key
    api_key.revoke()
    assert_refused(
        register_with({"Authorization": f"Bearer {full_key}"}), "The API key has been revoked."
    )


def test_an_expired_key(key):
    api_key, full_key = key
    ApiKey.objects.filter(pk=api_key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_refused(
        register_with({"Authorization": f"Bearer {full_key}"}), "The API key has expired."
    )


def test_a_key_of_an_inactive_tenant(key, acme):
    acme.tenant.is_active = False
    acme.tenant.save()
    assert_refused(register_with({"X-API-Key": key[1]}), "The API key's tenant is not active.")


def test_a_personal_key_whose_owner_left(acme):
    owner = User.objects.create_user("gone", password="pw-gone-1234")
    Membership.objects.create(user=owner, tenant=acme.tenant, role="admin")
    _, full_key = ApiKey.issue(acme.tenant, label="mine", owner=owner)
    Membership.objects.filter(user=owner).delete()
    assert_refused(
        register_with({"Authorization": f"Bearer {full_key}"}),
        "The API key's owner is no longer a member of its tenant.",
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("nonsense", "The API key is not in the form wb_<prefix>_<secret>."),
        (
            "wbp_abcdefgh_" + "x" * 43,
            "This is a management API token (for /api/v1): /mcp takes an API key or an OAuth "
            "access token.",
        ),
    ],
)
def test_what_is_not_an_api_key(db, value, reason):
    assert_refused(register_with({"Authorization": f"Bearer {value}"}), reason)


@pytest.mark.parametrize("value", ["good", "wbo_" + "x" * 43])
def test_a_key_mcp_takes_or_an_access_token(key, value):
    """Nothing to say about the credential itself: the refusal says what it carries."""
    credential = key[1] if value == "good" else value
    assert_refused(register_with({"Authorization": f"Bearer {credential}"}), CARRIES_CREDENTIAL)


def test_a_basic_authorization_is_no_credential(db):
    """A proxy in front may send its own Basic credentials: no API key, no refusal."""
    assert register_with({"Authorization": "Basic dXNlcjpwYXNz"}).status_code == 201


def make_application(name: str, source: str, age: timedelta) -> object:
    application = Application.objects.create(
        name=name,
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:33418/callback",
        client_secret="",
        registration_source=source,
    )
    Application.objects.filter(pk=application.pk).update(created=timezone.now() - age)
    return application


def test_unused_registrations_are_deleted_at_the_next_one(acme, people, settings):
    settings.WORKBENCH_OAUTH_UNUSED_CLIENT_SECONDS = 3600
    dcr = Application.RegistrationSource.DCR
    old = timedelta(seconds=3601)
    make_application("abandoned", dcr, old)
    make_application("recent", dcr, timedelta(seconds=3500))
    make_application("operator's", Application.RegistrationSource.MANUAL, old)
    consented = make_application("consented", dcr, old)
    withdrawn = make_application("consented, then revoked", dcr, old)
    for application in (consented, withdrawn):
        grant = OAuthGrant.objects.create(
            user=people["acme_admin"], tenant=acme.tenant, application=application
        )
    grant.revoke()

    assert register_with({}).status_code == 201
    assert sorted(Application.objects.values_list("name", flat=True)) == [
        "Claude",
        "consented",
        "consented, then revoked",
        "operator's",
        "recent",
    ]
