"""In a real browser, through a real OpenID provider (npm's oidc-provider): a person signs
in and lands in the tenant and role their groups give; a group change at the provider
changes the role at the next sign-in; a connector signed in on the consent page through
the provider works until the provider's back-channel logout, which ends the admin session
and the connector's grant at once (its next /mcp request gets 401); with local passwords
off, the login page offers only the provider and refuses a password."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, OAuthGrant, SsoIdentity
from accounts.sso import discovery, failures
from accounts.sso.login_form import LOCAL_LOGIN_OFF
from tests.accounts.oauth_client import REDIRECT_URI, pkce
from tests.harness.oidc import IdP, running_idp
from tests.harness.results import INITIALIZE_PARAMS
from tests.harness.waits import wait_until
from toolboxes.models import Tenant, Toolbox

# The admin in Chromium: the same flows whatever the test database: the SQLite pass.
pytestmark = pytest.mark.once


@pytest.fixture(scope="module")
def idp() -> Iterator[IdP]:
    with running_idp() as provider:
        yield provider


@pytest.fixture
def corp(idp: IdP, live_gateway: Any, settings: Any, plain_http_cookies: None) -> IdP:
    """The provider knows this gateway (its redirect and back-channel logout URIs), and
    the gateway knows the provider and the group mapping kept in settings (the admin's
    rows add to it)."""
    base = live_gateway.url.removesuffix("/mcp")
    idp.register([f"{base}/sso/corp/callback"], f"{base}/sso/corp/backchannel-logout")
    discovery.forget()
    settings.WORKBENCH_OIDC_PROVIDERS = [idp.settings_entry()]
    settings.WORKBENCH_OIDC_GROUP_MAPPINGS = [
        {"group": "wb-acme-admins", "tenant": "acme", "role": "admin"},
    ]
    acme = Tenant.objects.create(slug="acme", name="Acme")
    Toolbox.objects.create(tenant=acme, name="dev", description="Acme tools")
    return idp


def sign_in_with_provider(page: Any, login: str, start: str = "/admin/login/?next=/admin/"):
    page.goto(start)
    page.click("#sso-corp")
    page.wait_for_selector("#idp-login")
    page.fill("#idp-login", login)
    page.click("#idp-submit")
    page.wait_for_load_state()


def snap(chromium: Any, page: Any, name: str) -> None:
    """A screenshot taken from within a browser step (already on the browser's thread)."""
    page.screenshot(path=str(chromium.screenshots / f"{name}.png"), full_page=True)


def initialize(url: str, token: str) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    return httpx2.post(url, json=body, headers=headers, timeout=30)


def test_groups_decide_the_role_and_a_change_applies_at_the_next_sign_in(
    chromium, corp, live_gateway
):
    base = live_gateway.url.removesuffix("/mcp")
    corp.person("u-ada", ["wb-acme-admins"], name="Ada Lovelace")
    page = chromium.new_page(base)

    def first() -> str:
        page.goto("/admin/login/?next=/admin/")
        snap(chromium, page, "sso-login-page")
        sign_in_with_provider(page, "u-ada")
        page.goto("/admin/accounts/membership/")
        snap(chromium, page, "sso-signed-in-admin-of-acme")
        return page.inner_text("#result_list")

    rows = chromium.run(first)
    assert "corp.u-ada\tAcme\tadmin" in rows
    user = SsoIdentity.objects.get(subject="u-ada").user
    assert dict(user.memberships.values_list("tenant__slug", "role")) == {"acme": "admin"}

    # An operator maps another group in the admin; the person's groups change at the
    # provider; the next sign-in follows them.
    User.objects.create_superuser("olga", password="pw-olga-sso-1")
    operator = chromium.new_page(base)

    def map_readers() -> str:
        operator.goto("/admin/login/?next=/admin/")
        operator.fill("#id_username", "olga")
        operator.fill("#id_password", "pw-olga-sso-1")
        operator.click("input[type=submit]")
        operator.wait_for_load_state()
        operator.goto("/admin/accounts/ssogroupmapping/add/")
        operator.fill("#id_group", "wb-acme-read*")
        operator.select_option("#id_tenant", label="Acme")
        operator.select_option("#id_role", value="viewer")
        snap(chromium, operator, "sso-operator-maps-a-group")
        operator.click("input[name=_save]")
        operator.wait_for_selector("text=was added successfully")
        return operator.inner_text("#result_list")

    assert "wb-acme-read*" in chromium.run(map_readers)
    corp.person("u-ada", ["wb-acme-readers"], name="Ada Lovelace")

    def again() -> tuple[str, int]:
        page.context.clear_cookies()  # a new sign-in, at the provider too
        sign_in_with_provider(page, "u-ada")
        page.goto("/admin/accounts/membership/")
        snap(chromium, page, "sso-next-sign-in-viewer-of-acme")
        rows = page.inner_text("#result_list")
        status = page.goto("/admin/accounts/membership/add/").status
        return rows, status

    rows, add_status = chromium.run(again)
    assert "corp.u-ada\tAcme\tviewer" in rows
    assert add_status == 403  # a viewer may not add members
    assert dict(user.memberships.values_list("tenant__slug", "role")) == {"acme": "viewer"}

    # The operator sees where the person came from and what each group gave.
    identity = SsoIdentity.objects.get(subject="u-ada")

    def identity_page() -> str:
        operator.goto(f"/admin/accounts/ssoidentity/{identity.pk}/change/")
        snap(chromium, operator, "sso-operator-sees-identity")
        return operator.inner_text("#content")

    text = chromium.run(identity_page)
    assert "u-ada" in text and "wb-acme-readers" in text and "corp" in text

    # Someone whose groups give no tenant: signed in to nothing, and told so.
    corp.person("u-sam", ["sales"])
    stranger = chromium.new_page(base)

    def no_tenant() -> tuple[str, int]:
        sign_in_with_provider(stranger, "u-sam")
        snap(chromium, stranger, "sso-no-tenant")
        text = stranger.inner_text("#sso-failure")
        return text, stranger.goto("/admin/").url.count("/admin/login/")

    text, at_login = chromium.run(no_tenant)
    assert text == failures.NO_TENANT.format(
        provider="Corp IdP", user="u-sam@corp.example", groups="sales"
    )
    assert at_login == 1


def test_consent_through_the_provider_then_back_channel_logout_ends_everything(
    chromium, corp, live_gateway
):
    corp.person("u-bo", ["wb-acme-admins"], name="Bo")
    base = live_gateway.url.removesuffix("/mcp")
    registered = httpx2.post(
        f"{base}/oauth/register",
        json={
            "client_name": "Claude",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
        timeout=30,
    )
    client_id = registered.json()["client_id"]
    verifier, challenge = pkce()
    authorize = "/oauth/authorize?" + str(
        httpx2.QueryParams(
            {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT_URI,
                "state": "st-1",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": live_gateway.url,
                "scope": "mcp",
            }
        )
    )
    page = chromium.new_page(base)
    landed: list[str] = []

    def fulfil(route: Any) -> None:
        landed.append(route.request.url)
        route.fulfill(body="signed in")

    def consent() -> None:
        page.route(re.compile(r"^http://127\.0\.0\.1:33418/"), lambda route: fulfil(route))
        page.goto(authorize)  # not signed in: the login page, with the provider's button
        snap(chromium, page, "sso-consent-asks-to-sign-in")
        page.click("#sso-corp")
        page.fill("#idp-login", "u-bo")
        page.click("#idp-submit")
        page.wait_for_selector("#consent")
        snap(chromium, page, "sso-consent-page-after-provider")
        page.click("input[name=allow]")
        page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:33418/"))

    chromium.run(consent)
    query = parse_qs(urlsplit(landed[0]).query)
    token = httpx2.post(
        f"{base}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": query["code"][0],
            "redirect_uri": REDIRECT_URI,
            "client_id": client_id,
            "code_verifier": verifier,
            "resource": live_gateway.url,
        },
        timeout=30,
    ).json()["access_token"]
    assert initialize(live_gateway.url, token).status_code == 200

    # The person leaves the company: the provider's back-channel logout.
    assert corp.control("logout", sub="u-bo")["ok"]
    wait_until(
        lambda: OAuthGrant.objects.filter(revoked_at__isnull=False).exists(),
        10,
        "the grant revoked",
    )
    refused = initialize(live_gateway.url, token)
    assert refused.status_code == 401
    error = refused.json()["error"]
    assert error["message"] == "The access token is not valid."
    assert error["data"] == {"reason": "invalid_token"}

    def admin_after_logout() -> str:
        page.goto("/admin/")
        snap(chromium, page, "sso-after-back-channel-logout")
        return page.url

    assert "/admin/login/" in chromium.run(admin_after_logout)
    # Memberships stay until the groups say otherwise (the next sign-in or re-check).
    assert Membership.objects.filter(user__sso_identities__subject="u-bo").exists()


def test_local_passwords_off_offer_only_the_provider(chromium, corp, live_gateway, settings):
    settings.WORKBENCH_LOCAL_LOGIN = False
    User.objects.create_user("hal", password="pw-hal-local-2", is_staff=True)
    page = chromium.new_page(live_gateway.url.removesuffix("/mcp"))

    def login_page() -> tuple[int, int, str]:
        page.goto("/admin/login/?next=/admin/")
        snap(chromium, page, "sso-local-login-off")
        buttons, fields = page.locator("#sso-corp").count(), page.locator("#id_password").count()
        page.goto("/admin/login/?local=1&next=/admin/")
        page.fill("#id_username", "hal")
        page.fill("#id_password", "pw-hal-local-2")
        page.click("input[type=submit]")
        page.wait_for_load_state()
        snap(chromium, page, "sso-local-login-refused")
        return buttons, fields, page.inner_text("#content")

    buttons, fields, text = chromium.run(login_page)
    assert (buttons, fields) == (1, 0)
    assert html.unescape(LOCAL_LOGIN_OFF) in text
