"""Single sign-on against a real OpenID provider (npm's oidc-provider, started once for the
module): first sign-in, groups to memberships, every failure's exact text, key rotation,
back-channel logout, local passwords turned off. The browser flows: tests/browser/
test_sso_flow.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import Application

from accounts.models import (
    ApiToken,
    Membership,
    OAuthGrant,
    SsoGroupMapping,
    SsoIdentity,
    SsoMembership,
    SsoSession,
)
from accounts.sso import discovery, failures
from accounts.sso.login_form import LOCAL_LOGIN_OFF
from accounts.sso.providers import check, parse, provider_named
from tests.accounts.sso_walk import BASE, callback_of, sign_in, text_of
from tests.harness.net import free_port
from tests.harness.oidc import IdP, running_idp, sign_in_at_provider
from tests.harness.paths import ROOT
from toolboxes.models import Tenant

# The provider and the flows are the same whatever the database: one pass runs them.
pytestmark = [pytest.mark.django_db, pytest.mark.once_pg]

CALLBACK = callback_of("corp")
TITLE = "Corp IdP"


@pytest.fixture(scope="module")
def idp() -> Iterator[IdP]:
    with running_idp() as provider:
        provider.register([CALLBACK], f"{BASE}/sso/corp/backchannel-logout")
        yield provider


@pytest.fixture
def corp(idp: IdP, settings: Any) -> IdP:
    discovery.forget()
    settings.WORKBENCH_OIDC_PROVIDERS = [idp.settings_entry()]
    settings.WORKBENCH_OIDC_GROUP_MAPPINGS = [
        {"group": "wb-acme-admins", "tenant": "acme", "role": "admin"},
        {"group": "wb-acme-*", "tenant": "acme", "role": "viewer"},
        {"group": "wb-globex-viewers", "tenant": "globex", "role": "viewer"},
        {"group": "platform-team", "operators": True, "provider": "corp"},
    ]
    Tenant.objects.create(slug="acme", name="Acme")
    Tenant.objects.create(slug="globex", name="Globex")
    return idp


def test_first_sign_in_creates_the_user_with_the_groups_memberships(corp: IdP) -> None:
    corp.person("u-ada", ["wb-acme-admins", "wb-globex-viewers", "other"], name="Ada")
    client = Client()
    response = sign_in(client, "u-ada")
    assert response.status_code == 302 and response["Location"] == "/admin/"
    identity = SsoIdentity.objects.get(subject="u-ada")
    assert identity.issuer == corp.issuer and identity.provider == "corp"
    assert identity.groups == ["other", "wb-acme-admins", "wb-globex-viewers"]
    user = identity.user
    assert user.is_staff and not user.has_usable_password()
    roles = dict(Membership.objects.filter(user=user).values_list("tenant__slug", "role"))
    assert roles == {"acme": "admin", "globex": "viewer"}
    given = dict(SsoMembership.objects.values_list("membership__tenant__slug", "group"))
    assert given == {"acme": "wb-acme-admins", "globex": "wb-globex-viewers"}
    assert client.get("/admin/").status_code == 200
    assert SsoSession.objects.filter(identity=identity).count() == 1
    client.post("/admin/logout/")
    sign_in(Client(), "u-ada")  # the record of the session logged out is gone
    assert SsoSession.objects.filter(identity=identity).count() == 1


def test_memberships_follow_the_groups_and_hand_added_ones_stay(corp: IdP, caplog: Any) -> None:
    corp.person("u-bo", ["wb-acme-admins", "platform-team"])
    sign_in(Client(), "u-bo")
    user = SsoIdentity.objects.get(subject="u-bo").user
    assert user.groups.filter(name="operators").exists()
    Membership.objects.create(user=user, tenant=Tenant.objects.get(slug="globex"), role="admin")
    corp.person("u-bo", ["wb-acme-readers"])  # admin → viewer (pattern), not an operator
    sign_in(Client(), "u-bo")
    roles = dict(Membership.objects.filter(user=user).values_list("tenant__slug", "role"))
    assert roles == {"acme": "viewer", "globex": "admin"}
    assert not user.groups.filter(name="operators").exists()
    acme_id = Tenant.objects.get(slug="acme").pk
    logged = [r.changes for r in caplog.records if r.getMessage() == "sso memberships changed"]
    assert logged[-1] == [
        f"admin → viewer in tenant {acme_id} (wb-acme-readers)",
        "no longer an operator",
    ]
    corp.person("u-bo", [])  # out of every group: the hand-added membership stays
    sign_in(Client(), "u-bo")
    roles = dict(Membership.objects.filter(user=user).values_list("tenant__slug", "role"))
    assert roles == {"globex": "admin"}


def test_an_existing_user_is_found_by_email_only_when_the_provider_is_trusted(
    corp: IdP, settings: Any
) -> None:
    local = User.objects.create_user("carol", email="u-carol@corp.example", is_staff=True)
    corp.person("u-carol", ["wb-acme-admins"], email_verified=True)
    sign_in(Client(), "u-carol")
    assert SsoIdentity.objects.get(subject="u-carol").user != local  # not trusted: a new user
    SsoIdentity.objects.get(subject="u-carol").user.delete()
    settings.WORKBENCH_OIDC_PROVIDERS = [corp.settings_entry(emails_verified=True)]
    sign_in(Client(), "u-carol")
    assert SsoIdentity.objects.get(subject="u-carol").user == local


def test_a_person_whose_groups_give_no_tenant_is_told_so(corp: IdP) -> None:
    corp.person("u-dan", ["sales"])
    client = Client()
    response = sign_in(client, "u-dan")
    expected = failures.NO_TENANT.format(provider=TITLE, user="u-dan@corp.example", groups="sales")
    assert response.status_code == 403
    assert expected in text_of(response)
    assert client.get("/admin/").status_code == 302  # not signed in


@pytest.mark.parametrize(
    ("tamper", "text"),
    [
        ("audience", failures.WRONG_AUDIENCE),
        ("expired", failures.EXPIRED),
        ("nonce", failures.NONCE_MISMATCH),
        ("signature", failures.BAD_SIGNATURE),
    ],
)
def test_an_id_token_failing_a_check_signs_nobody_in(corp: IdP, tamper: str, text: str) -> None:
    corp.person("u-eve", ["wb-acme-admins"])
    client = Client()
    response = sign_in(client, "u-eve", tamper=tamper, idp=corp)
    assert response.status_code == 400
    assert text.format(provider=TITLE) in text_of(response)
    assert client.get("/admin/").status_code == 302
    assert not SsoIdentity.objects.filter(subject="u-eve").exists()


def test_an_unknown_or_replayed_state_is_refused(corp: IdP) -> None:
    corp.person("u-fay", ["wb-acme-admins"])
    client = Client()
    start = client.get("/sso/corp/login")
    back = urlsplit(sign_in_at_provider(start["Location"], "u-fay", CALLBACK))
    assert client.get(f"{back.path}?{back.query}").status_code == 302
    replay = Client()
    replay.force_login(User.objects.create_user("mallory"))
    for answer in (
        client.get(f"{back.path}?{back.query}"),
        replay.get(f"{back.path}?{back.query}"),
    ):
        assert answer.status_code == 400
        assert failures.STATE_UNKNOWN in text_of(answer)


def test_a_provider_that_cannot_be_reached_is_said_so(corp: IdP, settings: Any) -> None:
    down = {**corp.settings_entry(name="down"), "issuer": f"http://127.0.0.1:{free_port()}"}
    settings.WORKBENCH_OIDC_PROVIDERS = [down]
    response = Client().get("/sso/down/login")
    assert response.status_code == 502
    assert failures.PROVIDER_DOWN.format(provider=TITLE) in text_of(response)


def test_a_rotated_signing_key_is_fetched_and_followed(corp: IdP) -> None:
    corp.person("u-gil", ["wb-acme-admins"])
    assert sign_in(Client(), "u-gil").status_code == 302
    kid = corp.control("rotate")["kid"]
    response = sign_in(Client(), "u-gil")  # signed with the new key, which we fetched
    assert response.status_code == 302
    cached = discovery.keys(provider_named("corp"))
    assert kid in {key.kid for key in cached.keys}


def test_local_passwords_off_leave_only_the_break_glass_superuser(corp: IdP, settings: Any) -> None:
    settings.WORKBENCH_LOCAL_LOGIN = False
    User.objects.create_user("hal", password="pw-hal-local-1", is_staff=True)
    User.objects.create_superuser("root", password="pw-root-local-1")
    page = Client().get("/admin/login/?next=/admin/")
    assert 'id="sso-corp"' in text_of(page) and 'id="id_password"' not in text_of(page)
    refused = Client().post(
        "/admin/login/?next=/admin/", {"username": "hal", "password": "pw-hal-local-1"}
    )
    assert refused.status_code == 200 and LOCAL_LOGIN_OFF in text_of(refused)
    allowed = Client().post(
        "/admin/login/?next=/admin/", {"username": "root", "password": "pw-root-local-1"}
    )
    assert allowed.status_code == 302
    settings.WORKBENCH_BREAK_GLASS_USERS = ["root"]  # named: other superusers are refused
    User.objects.create_superuser("sue", password="pw-sue-local-1")
    other = Client().post(
        "/admin/login/?next=/admin/", {"username": "sue", "password": "pw-sue-local-1"}
    )
    assert other.status_code == 200 and LOCAL_LOGIN_OFF in text_of(other)
    # The break-glass form is throttled like any login: the limit, then 429.
    for _ in range(settings.AXES_FAILURE_LIMIT):
        Client().post("/admin/login/?local=1", {"username": "root", "password": "wrong"})
    locked = Client().post(
        "/admin/login/?next=/admin/", {"username": "root", "password": "pw-root-local-1"}
    )
    assert locked.status_code == 429


def test_a_back_channel_logout_ends_the_sessions_and_grants_once(corp: IdP) -> None:
    corp.person("u-ivy", ["wb-acme-admins"])
    client = Client()
    sign_in(client, "u-ivy")
    identity = SsoIdentity.objects.get(subject="u-ivy")
    session = SsoSession.objects.get(identity=identity)
    assert session.sid  # the provider's session, named in its logout token
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
    api_token = ApiToken.issue(identity.user, name="ivy's script")[1]
    api = {"HTTP_AUTHORIZATION": f"Bearer {api_token}"}
    assert Client().get("/api/v1/tenants", **api).status_code == 200
    token = corp.control("logout-token", sub="u-ivy")["logout_token"]
    logout = Client().post("/sso/corp/backchannel-logout", {"logout_token": token})
    assert logout.status_code == 200
    refused = Client().get("/api/v1/tenants", **api)
    assert refused.status_code == 401
    assert refused.json()["detail"] == "The API token has been revoked."
    assert client.get("/admin/").status_code == 302  # the admin session is gone
    grant.refresh_from_db()
    assert grant.revoked_at is not None
    identity.refresh_from_db()
    assert identity.logged_out_at is not None
    replay = Client().post("/sso/corp/backchannel-logout", {"logout_token": token})
    assert replay.status_code == 400
    assert replay.json() == {
        "error": "invalid_request",
        "error_description": "the logout token was already used",
    }


@pytest.mark.parametrize(
    ("token", "description"),
    [
        ("", "the logout_token parameter is required"),
        ("not.a.jwt", "the logout token was refused: bad signature"),
        ("forged", "the logout token was refused: bad signature"),
    ],
)
def test_a_bad_logout_token_is_refused(corp: IdP, token: str, description: str) -> None:
    if token == "forged":
        corp.person("u-jon", ["wb-acme-admins"])
        header, payload, signature = corp.control("logout-token", sub="u-jon")[
            "logout_token"
        ].split(".")
        token = f"{header}.{payload}.{signature[::-1]}"
    response = Client().post("/sso/corp/backchannel-logout", {"logout_token": token})
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "error_description": description}


def test_only_operators_see_and_edit_the_group_mapping() -> None:
    acme = Tenant.objects.create(slug="acme", name="Acme")
    admin_of_acme = User.objects.create_user("ann", is_staff=True)
    Membership.objects.create(user=admin_of_acme, tenant=acme, role="admin")
    member = Client()
    member.force_login(admin_of_acme)
    assert member.get("/admin/accounts/ssogroupmapping/").status_code == 403
    assert member.get("/admin/accounts/ssoidentity/").status_code == 403
    operator = Client()
    operator.force_login(User.objects.create_superuser("olga"))
    add = "/admin/accounts/ssogroupmapping/add/"
    both = operator.post(
        add, {"group": "wb-*", "tenant": acme.pk, "role": "admin", "operators": "on"}
    )
    assert "Map the group either to a tenant or to the operators." in text_of(both)
    saved = operator.post(add, {"group": "wb-acme-*", "tenant": acme.pk, "role": "admin"})
    assert saved.status_code == 302
    assert SsoGroupMapping.objects.get().tenant == acme


def test_a_provider_without_logout_is_re_checked_at_its_interval(corp: IdP, settings: Any) -> None:
    """The refresh token's use and the userinfo endpoint: groups follow on an admin
    request once due; a person gone at the provider loses access at the next check
    (`manage.py sso_recheck` for those who only use a connector)."""
    entry = corp.settings_entry(recheck_seconds=60, scopes="openid email groups offline_access")
    settings.WORKBENCH_OIDC_PROVIDERS = [entry]
    corp.person("u-kim", ["wb-acme-admins"])
    client = Client()
    sign_in(client, "u-kim")
    identity = SsoIdentity.objects.get(subject="u-kim")
    assert identity.refresh_token and "u-kim" not in identity.refresh_token  # encrypted
    user = identity.user

    corp.person("u-kim", ["wb-acme-readers"])
    assert client.get("/admin/").status_code == 200  # not due yet: nothing asked
    assert Membership.objects.get(user=user).role == "admin"
    SsoIdentity.objects.filter(pk=identity.pk).update(
        last_checked_at=timezone.now() - timedelta(seconds=61)
    )
    assert client.get("/admin/").status_code == 200
    assert Membership.objects.get(user=user).role == "viewer"

    corp.control("account/delete", sub="u-kim")
    SsoIdentity.objects.filter(pk=identity.pk).update(
        last_checked_at=timezone.now() - timedelta(seconds=61)
    )
    out = StringIO()
    call_command("sso_recheck", stdout=out)
    assert out.getvalue() == "Re-checked: 1 gone.\n"
    assert client.get("/admin/").status_code == 302  # the session ended with the check
    assert SsoIdentity.objects.get(pk=identity.pk).logged_out_at is not None


def test_the_providers_setting_is_checked_and_secrets_may_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKBENCH_OIDC_OKTA_PROD_CLIENT_SECRET", "from-env")
    found = parse(
        [
            {
                "name": "okta-prod",
                "issuer": "https://corp.okta.com/oauth2/default/",
                "client_id": "0oa1",
                "scopes": "email groups",
                "authorize_params": {"access_type": "offline"},
            }
        ]
    )["okta-prod"]
    assert found.client_secret == "from-env"
    assert found.issuer == "https://corp.okta.com/oauth2/default"
    assert found.scopes == ("openid", "email", "groups")
    assert found.authorize_params == (("access_type", "offline"),)
    refusals = {
        "WORKBENCH_OIDC_PROVIDERS[0]: name must match ^[a-z0-9][a-z0-9-]{0,39}$.": [
            {"name": "Okta Prod", "issuer": "x", "client_id": "y"}
        ],
        "WORKBENCH_OIDC_PROVIDERS[0]: issuer is required.": [{"name": "a", "client_id": "y"}],
        "WORKBENCH_OIDC_PROVIDERS[1]: the name 'a' is used twice.": [
            {"name": "a", "issuer": "x", "client_id": "y"},
            {"name": "a", "issuer": "x", "client_id": "y"},
        ],
        "WORKBENCH_OIDC_PROVIDERS[0]: authorize_params must be an object without the flow's "
        "own parameters.": [
            {"name": "a", "issuer": "x", "client_id": "y", "authorize_params": {"nonce": "1"}}
        ],
    }
    for message, items in refusals.items():
        with pytest.raises(ImproperlyConfigured) as raised:
            parse(items)
        assert str(raised.value) == message


def test_the_egress_policy_applies_to_the_provider(corp: IdP, settings: Any, caplog: Any) -> None:
    """The provider on loopback, which the tests' policy allows: refused once not allowed."""
    settings.WORKBENCH_EGRESS_ALLOW = []
    response = Client().get("/sso/corp/login")
    assert response.status_code == 502
    assert failures.PROVIDER_DOWN.format(provider=TITLE) in text_of(response)
    details = [getattr(record, "detail", "") for record in caplog.records]
    assert any("egress refused" in d and "loopback" in d for d in details), details


def test_the_consent_page_sends_straight_to_the_only_way_in(corp: IdP, settings: Any) -> None:
    authorize = "/oauth/authorize?client_id=c&response_type=code"
    assert Client().get(authorize)["Location"].startswith("/admin/login/?next=")
    settings.WORKBENCH_LOCAL_LOGIN = False
    sent = Client().get(authorize)["Location"]
    assert sent == "/sso/corp/login?next=/oauth/authorize%3Fclient_id%3Dc%26response_type%3Dcode"


def test_groups_left_out_of_the_id_token_come_from_userinfo(corp: IdP) -> None:
    corp.control("conform", on=True)
    try:
        corp.person("u-max", ["wb-acme-admins"])
        assert sign_in(Client(), "u-max").status_code == 302
    finally:
        corp.control("conform", on=False)
    user = SsoIdentity.objects.get(subject="u-max").user
    assert Membership.objects.get(user=user).role == "admin"


def test_a_deactivated_user_is_not_signed_in(corp: IdP) -> None:
    corp.person("u-ned", ["wb-acme-admins"])
    sign_in(Client(), "u-ned")
    User.objects.filter(sso_identities__subject="u-ned").update(is_active=False)
    client = Client()
    response = sign_in(client, "u-ned")
    assert response.status_code == 403 and failures.INACTIVE in text_of(response)
    assert client.get("/admin/").status_code == 302


def test_a_wrong_sso_setting_stops_the_start() -> None:
    with pytest.raises(ImproperlyConfigured) as raised:
        check([], [{"group": "wb-acme", "tenant": "acme", "operators": True}])
    assert str(raised.value) == (
        "WORKBENCH_OIDC_GROUP_MAPPINGS[0]: map the group to a tenant or to the operators."
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "WORKBENCH_OIDC_PROVIDERS": '[{"name": "corp", "issuer": "https://idp.example"}]',
    }
    started = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode != 0
    assert "WORKBENCH_OIDC_PROVIDERS[0]: client_id is required." in started.stderr
