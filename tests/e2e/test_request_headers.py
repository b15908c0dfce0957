"""Headers a request may not be ambiguous about (issue 20): one credential, one Origin, and a
401 challenge that names the gateway as configured, never as the request's Host says."""

from __future__ import annotations

import httpx2
import pytest

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.results import INITIALIZE_PARAMS, refusal_json

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("request_headers")]

TWO_CREDENTIALS = refusal_json(
    400,
    "multiple_credentials",
    "The request carries more than one credential: send one 'Authorization: Bearer "
    "<api key>' header or one 'X-API-Key: <api key>' header.",
)
METADATA = "/.well-known/oauth-protected-resource/mcp"


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    setup = make_tenant_setup("acme")
    setup.toolbox("dev")
    return setup


@pytest.fixture
def acme(world) -> TenantSetup:
    return world.new_key()


@pytest.fixture
def other_key(world) -> str:
    return world.new_key().key


@pytest.fixture
def live_gateway(module_gateway) -> LiveGateway:
    return module_gateway


async def post(url: str, headers: list[tuple[str, str]]) -> httpx2.Response:
    """An `initialize` with exactly these headers besides Accept (repeats kept)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE_PARAMS}
    sent = [("Accept", "application/json, text/event-stream"), *headers]
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, json=body, headers=sent)


def both_headers(key: str, other: str) -> list[tuple[str, str]]:
    return [("Authorization", f"Bearer {key}"), ("X-API-Key", other)]


@pytest.mark.parametrize(
    "sent",
    [
        lambda key, other: both_headers(key, other),
        lambda key, other: [("X-API-Key", other), ("Authorization", f"Bearer {key}")],
        lambda key, other: [
            ("Authorization", f"Bearer {other}"),
            ("Authorization", f"Bearer {key}"),
        ],
        lambda key, other: [("X-API-Key", other), ("X-API-Key", key)],
        lambda key, other: [("X-API-Key", key), ("X-API-Key", key)],  # even the same one
    ],
    ids=["bearer-and-x-api-key", "x-api-key-first", "two-bearers", "two-x-api-keys", "same-twice"],
)
async def test_two_credentials_are_refused_whatever_they_are(live_gateway, acme, other_key, sent):
    """Before issue 20 the last header won, silently: a proxy adding its own credential to a
    client's could make the client act as another key."""
    response = await post(live_gateway.url, sent(acme.key, other_key))
    assert response.status_code == 400, response.text
    assert response.json() == TWO_CREDENTIALS
    assert "www-authenticate" not in response.headers


async def test_one_credential_still_works(live_gateway, acme):
    for header in (("Authorization", f"Bearer {acme.key}"), ("X-API-Key", acme.key)):
        response = await post(live_gateway.url, [header])
        assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "origins",
    [
        ["http://evil.example", "http://localhost"],  # the last one good: once accepted
        ["http://localhost", "http://evil.example"],
        ["http://localhost", "http://localhost"],
    ],
    ids=["bad-then-good", "good-then-bad", "good-twice"],
)
async def test_more_than_one_origin_gets_a_bad_origins_answer(live_gateway, acme, origins):
    headers = [("Authorization", f"Bearer {acme.key}"), *(("Origin", o) for o in origins)]
    response = await post(live_gateway.url, headers)
    bad = await post(
        live_gateway.url,
        [("Authorization", f"Bearer {acme.key}"), ("Origin", "http://evil.example")],
    )
    assert (bad.status_code, bad.content) == (403, b"Invalid Origin header")
    assert (response.status_code, response.content) == (bad.status_code, bad.content)
    good = [("Authorization", f"Bearer {acme.key}"), ("Origin", "http://localhost")]
    assert (await post(live_gateway.url, good)).status_code == 200


async def test_the_challenge_never_names_a_foreign_host(live_gateway):
    """A foreign Host is refused (421) only once the caller is known; the 401 before that
    names the gateway by what is configured (here: no public URL, so the address it
    listens on), never by the request's Host."""
    port = live_gateway.url.split(":")[2].split("/")[0]
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port}/evil#"):
        response = await post(live_gateway.url, [("Host", host)])
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == (
            f'Bearer resource_metadata="http://127.0.0.1:{port}{METADATA}"'
        )


async def test_the_challenge_follows_the_public_url_whatever_the_host(live_gateway, settings):
    settings.WORKBENCH_PUBLIC_URL = "https://mcp.example.com/mcp"
    for host in ("evil.example", "127.0.0.1"):
        response = await post(live_gateway.url, [("Host", host)])
        assert response.headers["www-authenticate"] == (
            f'Bearer resource_metadata="https://mcp.example.com{METADATA}"'
        )


async def test_an_allowed_host_is_named_with_its_port(live_gateway):
    port = live_gateway.url.split(":")[2].split("/")[0]
    response = await post(live_gateway.url, [("Host", f"localhost:{port}")])
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="http://localhost:{port}{METADATA}"'
    )
