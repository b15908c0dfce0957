"""The management API and the gateway together: a member's personal API token (for /api/v1)
is never a credential at /mcp (refused by name, with the contract's 401: a JSON body saying
which, a Bearer challenge); a configuration applied through the API reaches clients."""

import sys
import uuid
from datetime import timedelta

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.utils import timezone
from oauth2_provider.models import AccessToken, get_application_model

from accounts.key_refusals import API_TOKEN_REFUSED
from accounts.models import ApiToken, GrantScope, Membership, OAuthGrant, OAuthGrantToken
from accounts.oauth_config import new_access_token
from mcp_gateway.front.auth import TOKEN_REFUSALS
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.results import (
    INITIALIZE_PARAMS,
    payload,
    raw_rpc,
    refusal_json,
    text_of,
    use,
)

pytestmark = pytest.mark.anyio


def member_token(setup) -> str:
    user = User.objects.create_user("ada", is_staff=True)
    Membership.objects.create(user=user, tenant=setup.tenant, role="admin")
    return ApiToken.issue(user, name="ci", tenant=setup.tenant)[1]


async def test_an_api_token_is_refused_at_mcp(live_gateway, amake_setup):
    setup = await amake_setup()
    token = await sync_to_async(member_token)(setup)
    async with httpx2.AsyncClient(timeout=30) as http:
        for url in (live_gateway.url, f"{live_gateway.url}/t/{setup.tenant.slug}"):
            response = await raw_rpc(
                http,
                url,
                "initialize",
                INITIALIZE_PARAMS,
                headers={"Authorization": f"Bearer {token}"},
            )
            assert response.json() == refusal_json(401, "api_token", API_TOKEN_REFUSED)
            assert response.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
            assert token not in response.text
    assert API_TOKEN_REFUSED == (
        "This is a management API token (for /api/v1): /mcp takes an API key or an OAuth "
        "access token."
    )


def operator_token() -> str:
    user = User.objects.create_superuser("olga")
    return ApiToken.issue(user, name="gitops")[1]


def config_with(marker: str) -> dict:
    server = {"command": sys.executable, "args": [FIXTURE_SERVER, "--prefix", marker]}
    return {"toolboxes": {"dev": {"description": "Dev tools", "mcpServers": {"fixture": server}}}}


async def test_a_configuration_applied_through_the_api_reaches_clients(live_gateway, amake_setup):
    """GitOps end to end: the live server's /api/v1 applies a document, its clients use it
    at once; a second document applied on the version read changes the server."""
    setup = await amake_setup()
    token = await sync_to_async(operator_token)()
    api = live_gateway.url.removesuffix("/mcp") + f"/api/v1/tenants/{setup.tenant.slug}/config"
    first, second = uuid.uuid4().hex, uuid.uuid4().hex
    async with httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {token}"}) as http:
        applied = await http.put(api, json=config_with(first))
        assert applied.status_code == 200 and applied.json()["created"] == ["dev", "dev/fixture"]
        async with live_gateway.session(setup.key) as session:
            payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            echoed = await session.call_tool(
                "use_tool", use("dev", "fixture", "echo", {"text": "1"})
            )
            assert text_of(echoed) == f"{first}1"
            changed = await http.put(
                api, json=config_with(second), headers={"If-Match": applied.headers["etag"]}
            )
            assert changed.json()["changed"] == [{"name": "dev/fixture", "fields": ["args"]}]
            echoed = await session.call_tool(
                "use_tool", use("dev", "fixture", "echo", {"text": "2"})
            )
            assert text_of(echoed) == f"{second}2"
        stale = await http.put(
            api, json=config_with(first), headers={"If-Match": applied.headers["etag"]}
        )
        assert stale.status_code == 409


def api_sign_in_token(setup) -> str:
    """An access token of a member's OAuth sign-in for the management API (scope api), as
    the authorization server stores it (tests/api/test_oauth.py drives the flow itself)."""
    user = User.objects.create_user("vic", is_staff=True)
    Membership.objects.create(user=user, tenant=setup.tenant, role="viewer")
    application = get_application_model().objects.create(
        name="cli",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:33418/callback",
    )
    grant = OAuthGrant.objects.create(
        user=user, tenant=setup.tenant, application=application, scope=GrantScope.API
    )
    raw = new_access_token()
    access = AccessToken.objects.create(
        user=user,
        application=application,
        token=raw,
        scope="api",
        expires=timezone.now() + timedelta(hours=1),
    )
    OAuthGrantToken.objects.create(grant=grant, access_token=access)
    return raw


async def test_an_api_sign_ins_token_is_refused_at_mcp(live_gateway, amake_setup):
    setup = await amake_setup()
    token = await sync_to_async(api_sign_in_token)(setup)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await raw_rpc(
            http, live_gateway.url, "initialize", INITIALIZE_PARAMS, headers=headers
        )
        assert response.status_code == 401, response.text
        assert response.json() == refusal_json(401, "api_scope", TOKEN_REFUSALS["api_scope"])
        me = await http.get(live_gateway.url.removesuffix("/mcp") + "/api/v1/me", headers=headers)
        assert me.status_code == 200 and me.json()["roles"] == {setup.tenant.slug: "viewer"}
