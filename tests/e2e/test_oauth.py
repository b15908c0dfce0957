"""A member signs a client in with OAuth, end to end: the SDK's own OAuth client provider
over real HTTP against a real uvicorn (discovery from the 401, registration, the login and
consent pages driven by an HTTP client with cookies and CSRF, token exchange), then the
gateway: initialize, open_toolbox, use_tool, FORBIDDEN outside the chosen toolboxes,
refresh after expiry, and refusals (revoked, expired, member gone, tenant inactive)."""

from __future__ import annotations

import json
import re
import time
from io import StringIO
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.management import call_command
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from oauth2_provider.models import AccessToken

from accounts.models import Membership, OAuthGrant
from tests.harness.results import (
    INITIALIZE_PARAMS,
    error_of,
    payload,
    raw_rpc,
    refusal_json,
    text_of,
    use,
)
from tests.harness.tenant_dirs import tenant_dir
from tests.harness.waits import eventually
from toolboxes.models import Tenant

pytestmark = pytest.mark.anyio

PASSWORD = "pw-ada-e2e-1234"
REDIRECT_URI = "http://127.0.0.1:33418/callback"
LIFETIME = 3  # seconds an access token lives here, so that the client must refresh
ECHO = use("dev", "fixture", "echo", {"text": "hi"})
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


class MemoryStorage:
    """The SDK's TokenStorage, in memory; it remembers every token set it was given."""

    def __init__(self) -> None:
        self.tokens: list[OAuthToken] = []
        self.expiry = 0.0  # when the latest access token expires, as the client reckons it
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens[-1] if self.tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens.append(tokens)
        self.expiry = time.time() + (tokens.expires_in or 0)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Member:
    """The person at the browser: logs in, consents to one toolbox, hands back the code."""

    def __init__(
        self, username: str, tenant_id: int, toolbox_ids: list[int], password: str = PASSWORD
    ) -> None:
        self.username, self.tenant_id, self.toolbox_ids = username, tenant_id, toolbox_ids
        self.password = password
        self.result: AuthorizationCodeResult | None = None
        self.pages: list[str] = []

    async def redirect_handler(self, url: str) -> None:
        async with httpx2.AsyncClient(timeout=30) as browser:
            response = await browser.get(url)
            assert response.status_code == 302, response.text  # to the login page
            login_url = urljoin(url, response.headers["location"])
            page = await browser.get(login_url)
            csrf = dict(HIDDEN.findall(page.text))["csrfmiddlewaretoken"]
            response = await browser.post(
                login_url,
                data={
                    "username": self.username,
                    "password": self.password,
                    "csrfmiddlewaretoken": csrf,
                    "next": parse_qs(urlsplit(login_url).query)["next"][0],
                },
            )
            assert response.status_code == 302, response.text  # back to the consent page
            consent_url = urljoin(url, response.headers["location"])
            page = await browser.get(consent_url)
            assert page.status_code == 200, page.text
            self.pages.append(page.text)
            form = dict(HIDDEN.findall(page.text))
            data = {
                **form,
                "tenant": str(self.tenant_id),
                "toolboxes": [str(pk) for pk in self.toolbox_ids],
                "allow": "Allow",
            }
            response = await browser.post(consent_url, data=data)
            assert response.status_code == 302, response.text
            location = response.headers["location"]
        assert location.startswith(REDIRECT_URI)
        query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
        self.result = AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


@pytest.fixture
def acme(make_setup, settings):
    # Plain-http cookies for the test's browser; short-lived access tokens.
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    settings.WORKBENCH_OAUTH_ACCESS_TOKEN_SECONDS = LIFETIME
    setup = make_setup("acme")
    dev = setup.toolbox("dev")
    setup.fixture_server(dev, "fixture")
    setup.toolbox("ops")
    user = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=user, tenant=setup.tenant, role="admin")
    setup.member = Member("ada", setup.tenant.pk, [dev.pk])
    return setup


def oauth_client(url: str, storage: MemoryStorage, member: Member) -> OAuthClientProvider:
    """The SDK's OAuth client, registering itself, with `member` at the browser."""
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="E2E client",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=member.redirect_handler,
        callback_handler=member.callback_handler,
    )


async def post_initialize(url: str, token: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30) as http:
        return await raw_rpc(
            http, url, "initialize", INITIALIZE_PARAMS, headers={"Authorization": f"Bearer {token}"}
        )


def assert_refused(response: httpx2.Response, reason: str, message: str, base: str) -> None:
    assert response.status_code == 401, response.text
    assert response.json() == refusal_json(401, reason, message)
    assert response.headers["www-authenticate"] == (
        f'Bearer error="invalid_token", error_description="{message}", '
        f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
    )


async def test_sign_in_use_refresh_and_revoke(live_gateway, acme, caplog):
    url = live_gateway.url
    base = url.removesuffix("/mcp")
    # A client with no credentials hears where to discover the authorization server.
    async with httpx2.AsyncClient(timeout=30) as http:
        bare = await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS)
    assert bare.status_code == 401
    assert bare.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
    )

    # The fixture server started beforehand (the pool is the tenant's): the sign-in's first
    # calls must end well within the token's short lifetime. A request that reaches the
    # gateway just after the token expired gets a 401, on which the SDK's client signs in
    # anew (a new grant, with nothing open) rather than refreshing.
    async with live_gateway.session(acme.key) as warm:
        assert payload(await warm.call_tool("open_toolbox", {"toolbox": "dev"}))["tools"]

    storage = MemoryStorage()
    provider = oauth_client(url, storage, acme.member)
    async with (
        httpx2.AsyncClient(auth=provider, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        initialized = await session.initialize()
        assert "**dev**" in initialized.instructions and "ops" not in initialized.instructions
        page = acme.member.pages[0]
        assert "E2E client" in page and "unverified: this client registered itself" in page
        assert payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))["tools"]
        assert text_of(await session.call_tool("use_tool", ECHO)) == "hi"
        forbidden = await session.call_tool("open_toolbox", {"toolbox": "ops"})
        assert error_of(forbidden) == (
            "FORBIDDEN",
            "Error: This API key may not use toolbox 'ops'. Available toolboxes: dev",
        )
        first = storage.tokens[0]
        assert first.access_token.startswith("wbo_") and first.expires_in == LIFETIME

        # Past the token's lifetime the client refreshes (rotation: a new refresh token
        # too), and what the sign-in opened is still open: it belongs to the grant.
        expiry = storage.expiry
        await eventually(lambda: time.time() > expiry + 0.1, LIFETIME + 5, "the token's expiry")
        assert text_of(await session.call_tool("use_tool", ECHO)) == "hi"
        latest = storage.tokens[-1]
        assert len(acme.member.pages) == 1  # refreshed: one sign-in, one grant
        assert latest.access_token != first.access_token
        assert latest.refresh_token != first.refresh_token
        assert_refused(
            await post_initialize(url, first.access_token),
            "invalid_token",  # rotated away: deleted, as a revoked one is
            "The access token is not valid.",
            base,
        )

        # Revoked (RFC 7009): refused at the next request.
        async with httpx2.AsyncClient(timeout=30) as plain:
            revoked = await plain.post(
                base + "/oauth/revoke",
                data={"token": latest.access_token, "client_id": storage.client.client_id},
            )
        assert revoked.status_code == 200
        assert_refused(
            await post_initialize(url, latest.access_token),
            "invalid_token",
            "The access token is not valid.",
            base,
        )
    logged = caplog.text
    for tokens in storage.tokens:
        assert tokens.access_token not in logged and tokens.refresh_token not in logged


@pytest.fixture
def issued(acme):
    """Tokens of ada's sign-in to acme limited to dev, issued without the browser dance.
    The tests that take them are about refusals, not expiry (the sign-in test has the short
    lifetime): the access token lives an hour, so a loaded machine cannot expire it first."""
    from datetime import timedelta

    from django.test import Client
    from django.utils import timezone

    from tests.accounts.oauth_client import SignIn

    flow = SignIn(Client())
    flow.client.force_login(User.objects.get(username="ada"))
    flow.register()
    tokens = flow.tokens(acme.tenant.pk, acme.member.toolbox_ids)
    AccessToken.objects.filter(scope="mcp").update(expires=timezone.now() + timedelta(hours=1))
    return tokens


async def test_refusals_of_a_token(live_gateway, acme, issued):
    url, base = live_gateway.url, live_gateway.url.removesuffix("/mcp")
    token = issued["access_token"]
    assert (await post_initialize(url, token)).status_code == 200

    membership = await Membership.objects.select_related("user").aget(user__username="ada")
    await sync_to_async(membership.delete)()
    assert_refused(
        await post_initialize(url, token),
        "not_a_member",
        "The signed-in user is no longer a member of the access token's tenant.",
        base,
    )
    await Membership.objects.acreate(user=membership.user, tenant=acme.tenant, role="admin")
    acme.tenant.is_active = False
    await acme.tenant.asave()
    assert_refused(
        await post_initialize(url, token),
        "inactive_tenant",
        "The access token's tenant is not active.",
        base,
    )
    acme.tenant.is_active = True
    await acme.tenant.asave()
    assert (await post_initialize(url, token)).status_code == 200

    grant = await OAuthGrant.objects.aget()
    await sync_to_async(grant.revoke)()
    assert_refused(
        await post_initialize(url, token), "invalid_token", "The access token is not valid.", base
    )


async def test_a_viewer_is_refused(live_gateway, acme, issued):
    """A member made a viewer may not use /mcp (it runs the tenant's tools): refused at
    its next request, and served again once made an admin."""
    url, base = live_gateway.url, live_gateway.url.removesuffix("/mcp")
    token = issued["access_token"]
    async with live_gateway.session(token) as session:
        assert payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))["tools"]
        assert text_of(await session.call_tool("use_tool", ECHO)) == "hi"
    membership = await Membership.objects.aget(user__username="ada")
    membership.role = "viewer"  # as the admin's role change saves it
    await membership.asave()
    assert_refused(
        await post_initialize(url, token),
        "viewer_role",
        "The signed-in user is a viewer of the access token's tenant: only its admins may "
        "use /mcp.",
        base,
    )
    membership.role = "admin"
    await membership.asave()
    assert (await post_initialize(url, token)).status_code == 200


async def test_expired_token(live_gateway, acme, issued):
    await AccessToken.objects.filter(scope="mcp").aupdate(expires="2000-01-01T00:00:00Z")
    base = live_gateway.url.removesuffix("/mcp")
    assert_refused(
        await post_initialize(live_gateway.url, issued["access_token"]),
        "expired_token",
        "The access token has expired.",
        base,
    )


@pytest.fixture
def demo(db, settings, tmp_path) -> Member:
    """`make run`'s world (setup_demo): its admin, at the browser with its printed password,
    consenting to the demo tenant with all of its toolboxes."""
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    credentials = tmp_path / "credentials.json"
    data_dir = tenant_dir("demo") / "demo-data"
    call_command(
        "setup_demo", "--credentials", str(credentials), "--data-dir", str(data_dir),
        stdout=StringIO(),
    )  # fmt: skip
    password = json.loads(credentials.read_text())["admin_password"]
    return Member("admin", Tenant.objects.get(slug="demo").pk, [], password=password)


async def test_make_runs_admin_signs_a_client_in_to_the_demo(live_gateway, demo):
    """The README's sign-in with the login `make run` prints: the consent page offers the
    demo tenant, and the client then sees its toolbox (issue 26: it was told it was a member
    of no tenant)."""
    storage = MemoryStorage()
    async with (
        httpx2.AsyncClient(auth=oauth_client(live_gateway.url, storage, demo), timeout=60) as http,
        streamable_http_client(live_gateway.url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        initialized = await session.initialize()
    assert "- **demo** (2 servers): " in initialized.instructions
    assert f'value="{demo.tenant_id}"' in demo.pages[0] and "Demo (demo)" in demo.pages[0]
    assert storage.tokens[0].access_token.startswith("wbo_")
