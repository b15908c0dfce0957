"""Issue 31, finding 5: an unauthenticated GET to the front-channel logout URL, with the
provider's public `iss` and a `sid` (which the provider puts in every application's ID
tokens), revoked all of a person's OAuth grants and API tokens.

Now front-channel logout is off unless the provider opts in (`frontchannel_logout`), and
then ends only the admin sessions of that `sid` at that issuer: no grant and no API token
goes (the signed back-channel logout still revokes them: tests/accounts/test_sso.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from oauth2_provider.models import Application

from accounts.models import ApiToken, OAuthGrant, SsoIdentity, SsoSession
from accounts.sso import discovery
from accounts.sso.providers import parse
from tests.accounts.sso_walk import BASE, callback_of, sign_in, text_of
from tests.harness.oidc import IdP, running_idp
from toolboxes.models import Tenant

pytestmark = [pytest.mark.django_db, pytest.mark.once_pg]

URL = "/sso/corp/frontchannel-logout"


@pytest.fixture(scope="module")
def idp() -> Iterator[IdP]:
    with running_idp() as provider:
        # Registered for back-channel logout with a session: then it puts a sid in its
        # ID tokens (as a front-channel provider does), as it does for every client.
        provider.register([callback_of("corp")], f"{BASE}/sso/corp/backchannel-logout")
        yield provider


@pytest.fixture
def corp(idp: IdP, settings: Any) -> IdP:
    discovery.forget()
    settings.WORKBENCH_OIDC_PROVIDERS = [idp.settings_entry(frontchannel_logout=True)]
    settings.WORKBENCH_OIDC_GROUP_MAPPINGS = [
        {"group": "wb-acme-admins", "tenant": "acme", "role": "admin"}
    ]
    Tenant.objects.create(slug="acme", name="Acme")
    return idp


def signed_in_with_grant_and_token(idp: IdP, sub: str) -> tuple[Client, SsoIdentity, Any, str]:
    """A person signed in to the admin, with a connector's grant and a personal API token."""
    idp.person(sub, ["wb-acme-admins"])
    client = Client()
    assert sign_in(client, sub).status_code == 302
    identity = SsoIdentity.objects.get(subject=sub)
    grant = OAuthGrant.objects.create(
        user=identity.user,
        tenant=Tenant.objects.get(slug="acme"),
        application=Application.objects.create(
            name="Claude",
            client_type="public",
            authorization_grant_type="authorization-code",
            redirect_uris="http://127.0.0.1:33418/callback",
        ),
    )
    token = ApiToken.issue(identity.user, name=f"{sub}'s script")[1]
    return client, identity, grant, token


def api_answer(token: str) -> int:
    return Client().get("/api/v1/tenants", HTTP_AUTHORIZATION=f"Bearer {token}").status_code


def test_an_anonymous_front_channel_logout_revokes_no_grant_and_no_token(corp: IdP) -> None:
    """The attack: anyone who knows the issuer and a sid (any application of the provider
    sees it in its ID tokens) loads the URL. Only that browser session ends."""
    client, identity, grant, token = signed_in_with_grant_and_token(corp, "u-ana")
    sid = SsoSession.objects.get(identity=identity).sid
    assert sid and api_answer(token) == 200
    answer = Client().get(URL, {"iss": corp.issuer, "sid": sid})  # nobody signed in
    assert answer.status_code == 200
    assert client.get("/admin/").status_code == 302  # that admin session ended
    grant.refresh_from_db()
    assert grant.revoked_at is None  # the connector keeps working
    assert api_answer(token) == 200  # and so does the API token
    assert not ApiToken.objects.filter(user=identity.user, revoked_at__isnull=False).exists()
    identity.refresh_from_db()
    assert identity.logged_out_at is None  # re-checks (if any) go on: access did not end


def test_front_channel_logout_is_off_unless_the_provider_opts_in(corp: IdP, settings: Any) -> None:
    settings.WORKBENCH_OIDC_PROVIDERS = [corp.settings_entry()]  # no frontchannel_logout
    client, identity, grant, token = signed_in_with_grant_and_token(corp, "u-ben")
    sid = SsoSession.objects.get(identity=identity).sid
    answer = Client().get(URL, {"iss": corp.issuer, "sid": sid})
    assert answer.status_code == 404
    assert answer.content.decode() == "Front-channel logout is off for this identity provider."
    assert client.get("/admin/").status_code == 200  # nothing ended
    grant.refresh_from_db()
    assert grant.revoked_at is None and api_answer(token) == 200


def test_only_the_sessions_of_that_sid_at_that_issuer_end(corp: IdP) -> None:
    client, identity, _, _ = signed_in_with_grant_and_token(corp, "u-cal")
    sid = SsoSession.objects.get(identity=identity).sid
    # The same sid string at another issuer: another provider's session, untouched.
    other = Client()
    other.force_login(User.objects.create_user("dora", is_staff=True, is_superuser=True))
    elsewhere = SsoIdentity.objects.create(
        user=User.objects.get(username="dora"),
        provider="other",
        issuer="https://other.example",
        subject="u-dora",
    )
    SsoSession.objects.create(identity=elsewhere, session_key=other.session.session_key, sid=sid)
    # A second admin session of the same person, from another provider session.
    second = Client()
    assert sign_in(second, "u-cal").status_code == 302
    assert client.get("/admin/").status_code == 200 and second.get("/admin/").status_code == 200
    SsoSession.objects.filter(identity=identity, sid=sid).exclude(
        session_key=client.session.session_key
    ).update(sid="another-provider-session")

    assert Client().get(URL, {"iss": corp.issuer, "sid": sid}).status_code == 200
    assert client.get("/admin/").status_code == 302
    assert second.get("/admin/").status_code == 200
    assert other.get("/admin/").status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        {"iss": "https://elsewhere.example", "sid": "s"},
        {"sid": "s"},
        {"iss": "ISSUER"},
    ],
)
def test_a_front_channel_logout_without_its_iss_and_sid_is_refused(
    corp: IdP, query: dict[str, str]
) -> None:
    query = {key: corp.issuer if value == "ISSUER" else value for key, value in query.items()}
    answer = Client().get(URL, query)
    assert answer.status_code == 400
    assert answer.content.decode() == "The iss and sid parameters are required."


def test_an_unknown_sid_ends_nothing(corp: IdP) -> None:
    client, _, _, _ = signed_in_with_grant_and_token(corp, "u-dee")
    answer = Client().get(URL, {"iss": corp.issuer, "sid": "not-a-session"})
    assert answer.status_code == 200
    assert client.get("/admin/").status_code == 200


def test_the_opt_in_is_a_boolean_off_by_default() -> None:
    entry = {"name": "corp", "issuer": "https://idp.example", "client_id": "wb"}
    assert parse([entry])["corp"].frontchannel_logout is False
    assert parse([{**entry, "frontchannel_logout": True}])["corp"].frontchannel_logout is True
    for field in ("frontchannel_logout", "emails_verified"):
        with pytest.raises(ImproperlyConfigured) as raised:
            parse([{**entry, field: "false"}])  # a string would have been true
        assert str(raised.value) == f"WORKBENCH_OIDC_PROVIDERS[0]: {field} must be true or false."


def test_the_admin_shows_whether_front_channel_logout_is_on(corp: IdP, settings: Any) -> None:
    corp.person("u-eli", ["wb-acme-admins"])
    sign_in(Client(), "u-eli")
    identity = SsoIdentity.objects.get(subject="u-eli")
    operator = Client()
    operator.force_login(User.objects.create_superuser("olga"))
    page = f"/admin/accounts/ssoidentity/{identity.pk}/change/"
    shown = text_of(operator.get(page))
    assert "Front-channel logout:" in shown
    assert "on: ends the admin sessions of that provider session, nothing else" in shown
    settings.WORKBENCH_OIDC_PROVIDERS = [corp.settings_entry()]
    assert "off: its front-channel logout URL answers 404" in text_of(operator.get(page))
    settings.WORKBENCH_OIDC_PROVIDERS = []
    assert "unknown: the provider is no longer configured" in text_of(operator.get(page))
