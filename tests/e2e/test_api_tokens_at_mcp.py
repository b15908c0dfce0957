"""A member's personal API token (for /api/v1) is never a credential at /mcp: the gateway
refuses it by name, with the contract's 401 (a JSON body saying which, a Bearer challenge)."""

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from accounts.models import ApiToken, Membership
from mcp_gateway.front.auth import API_TOKEN_REFUSED
from tests.harness.results import INITIALIZE_PARAMS, raw_rpc

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
            assert response.status_code == 401, response.text
            assert response.json()["error"] == "api_token"
            assert response.json()["message"] == API_TOKEN_REFUSED
            assert response.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
            assert token not in response.text
    assert API_TOKEN_REFUSED == (
        "This is a management API token (for /api/v1): /mcp takes an API key or an OAuth "
        "access token."
    )
