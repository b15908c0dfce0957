"""API keys at the HTTP boundary: every 401, both headers, revocation, scoped keys."""

from datetime import timedelta

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone
from mcp.shared.exceptions import MCPError

from tests.harness.results import INITIALIZE_PARAMS, error_of, payload, raw_rpc, refusal_json, use
from tests.harness.waits import eventually
from toolboxes.models import ApiKey

pytestmark = pytest.mark.anyio


async def post_initialize(url: str, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30) as http:
        return await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS, headers=headers)


METADATA = "/.well-known/oauth-protected-resource/mcp"
REFUSALS = {
    "malformed_authorization": "The Authorization header must be 'Bearer <api key>'.",
    "malformed_api_key": "The API key is not in the form wb_<prefix>_<secret>.",
    "invalid_api_key": "The API key is not valid.",
    "revoked_api_key": "The API key has been revoked.",
    "expired_api_key": "The API key has expired.",
    "inactive_tenant": "The API key's tenant is not active.",
}


def assert_401(response: httpx2.Response, reason: str) -> None:
    """A refused credential: its reason in the body and the challenge, and no invitation to
    sign in (no resource_metadata), so that an OAuth client such as mcp-remote shows the
    reason rather than starting a sign-in."""
    assert response.status_code == 401, response.text
    assert response.json() == refusal_json(401, reason, REFUSALS[reason])
    assert response.headers["www-authenticate"] == (
        f'Bearer error="invalid_token", error_description="{REFUSALS[reason]}"'
    )
    assert response.headers["content-type"] == "application/json"


async def test_missing_key_is_invited_to_sign_in(live_gateway):
    response = await post_initialize(live_gateway.url, {})
    assert response.status_code == 401, response.text
    assert response.json() == refusal_json(
        401,
        "missing_api_key",
        "An API key is required: send 'Authorization: Bearer <api key>' or 'X-API-Key: <api key>'.",
    )
    base = live_gateway.url.removesuffix("/mcp")
    assert response.headers["www-authenticate"] == f'Bearer resource_metadata="{base}{METADATA}"'
    assert response.headers["content-type"] == "application/json"


async def test_not_a_bearer_authorization(live_gateway):
    response = await post_initialize(live_gateway.url, {"Authorization": "Basic dXNlcjpwYXNz"})
    assert_401(response, "malformed_authorization")


@pytest.mark.parametrize("key", ["nonsense", "wb_short_x", "wb_abcdefgh_" + "x" * 10])
async def test_malformed_key(live_gateway, key):
    response = await post_initialize(live_gateway.url, {"Authorization": f"Bearer {key}"})
    assert_401(response, "malformed_api_key")


async def test_unknown_key(live_gateway, amake_setup):
    setup = await amake_setup()
    forged = setup.key[:-4] + ("aaaa" if not setup.key.endswith("aaaa") else "bbbb")
    response = await post_initialize(live_gateway.url, {"Authorization": f"Bearer {forged}"})
    assert_401(response, "invalid_api_key")
    unknown_prefix = "wb_zzzzzzzz_" + setup.key.split("_", 2)[2]
    response = await post_initialize(live_gateway.url, {"X-API-Key": unknown_prefix})
    assert_401(response, "invalid_api_key")


async def test_revoked_key(live_gateway, amake_setup):
    setup = await amake_setup()
    await sync_to_async(setup.api_key.revoke)()
    response = await post_initialize(live_gateway.url, {"Authorization": f"Bearer {setup.key}"})
    assert_401(response, "revoked_api_key")


async def test_expired_key(live_gateway, amake_setup):
    setup = await amake_setup()
    await ApiKey.objects.filter(pk=setup.api_key.pk).aupdate(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    response = await post_initialize(live_gateway.url, {"Authorization": f"Bearer {setup.key}"})
    assert_401(response, "expired_api_key")


async def test_inactive_tenant(live_gateway, amake_setup):
    setup = await amake_setup()
    setup.tenant.is_active = False
    await setup.tenant.asave()
    response = await post_initialize(live_gateway.url, {"X-API-Key": setup.key})
    assert_401(response, "inactive_tenant")


@pytest.mark.parametrize("header", ["Authorization", "X-API-Key"])
async def test_both_headers_are_accepted(live_gateway, amake_setup, header):
    setup = await amake_setup()
    await setup.atoolbox("dev")
    async with live_gateway.client(setup.key, header=header) as client:
        assert "**dev**" in client.instructions


async def test_revocation_takes_effect_mid_session(live_gateway, amake_setup):
    setup = await amake_setup()
    await setup.afixture_server(await setup.atoolbox("dev"), "fixture")
    async with live_gateway.session(setup.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        ok = await session.call_tool("use_tool", use("dev", "fixture", "echo", {"text": "a"}))
        assert not ok.is_error
        # Bulk, as the admin action does.
        await sync_to_async(ApiKey.objects.filter(pk=setup.api_key.pk).revoke)()
        with pytest.raises(MCPError):
            await session.call_tool("use_tool", use("dev", "fixture", "echo", {"text": "b"}))


async def test_last_used_is_recorded(live_gateway, amake_setup):
    setup = await amake_setup()
    assert setup.api_key.last_used_at is None
    async with live_gateway.session(setup.key):
        pass

    async def recorded() -> bool:
        return (await ApiKey.objects.aget(pk=setup.api_key.pk)).last_used_at is not None

    await eventually(recorded, 10, "last_used_at to be written")


async def test_scoped_key_is_forbidden_other_toolboxes(live_gateway, amake_setup):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    prod = await setup.atoolbox("prod")
    await setup.afixture_server(dev, "fixture", tool_filters=["echo"])
    await setup.afixture_server(prod, "fixture", tool_filters=["echo"])
    _, scoped_key = await sync_to_async(ApiKey.issue)(
        setup.tenant, label="dev only", toolboxes=[dev]
    )
    async with live_gateway.session(scoped_key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        opened = await session.call_tool("open_toolbox", {"toolbox": "prod"})
        used = await session.call_tool("use_tool", use("prod", "fixture", "echo"))
        missing = await session.call_tool("open_toolbox", {"toolbox": "nope"})
    forbidden = "Error: This API key may not use toolbox 'prod'. Available toolboxes: dev"
    assert error_of(opened) == ("FORBIDDEN", forbidden)
    assert error_of(used) == ("FORBIDDEN", forbidden)
    assert error_of(missing) == (
        "TOOLBOX_NOT_FOUND",
        "Error: Toolbox 'nope' not found. Available toolboxes: dev",
    )


async def test_foreign_host_is_refused(live_gateway, amake_setup):
    setup = await amake_setup()
    response = await post_initialize(
        live_gateway.url, {"Authorization": f"Bearer {setup.key}", "Host": "evil.example"}
    )
    assert response.status_code == 421


async def test_a_limited_key_whose_toolboxes_are_deleted_sees_none(live_gateway, amake_setup):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.atoolbox("prod")
    _, scoped_key = await sync_to_async(ApiKey.issue)(
        setup.tenant, label="dev only", toolboxes=[dev]
    )
    await dev.adelete()
    async with live_gateway.session(scoped_key) as session:
        instructions = session.initialize_result.instructions
        result = await session.call_tool("open_toolbox", {"toolbox": "prod"})
    assert "prod" not in instructions
    assert error_of(result)[0] == "FORBIDDEN"


@pytest.mark.parametrize("era", ["session", "client"])
async def test_the_sdk_clients_user_is_told_the_keys_reason(live_gateway, amake_setup, era):
    """The SDK's client (2.x) shows a refused request's JSON-RPC error as it came: without
    it, its user read only 'Server returned an error response' (issue 23)."""
    setup = await amake_setup()
    wrong = setup.key[:-4] + ("aaaa" if not setup.key.endswith("aaaa") else "bbbb")
    with pytest.raises(BaseException) as raised:
        if era == "session":
            async with live_gateway.session(wrong):
                pass
        else:
            async with live_gateway.client(wrong) as client:
                await client.list_tools()
    refused = raised.value
    while isinstance(refused, BaseExceptionGroup):  # the client's task groups around it
        (refused,) = refused.exceptions
    assert isinstance(refused, MCPError), repr(refused)
    assert refused.message == REFUSALS["invalid_api_key"]
    assert refused.data == {"reason": "invalid_api_key"}
