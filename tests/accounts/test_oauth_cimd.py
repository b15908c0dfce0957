"""Client ID Metadata Documents: fetched under the egress policy, bounded in size, and the
client they describe shown on the consent page as unverified."""

from __future__ import annotations

import json

import httpx2
import pytest
from django.core.cache import cache
from oauth2_provider.cimd import _backoff_cache_key

from accounts.oauth_cimd import EgressFetcher
from tests.accounts.oauth_client import REDIRECT_URI, SignIn

pytestmark = pytest.mark.django_db
CLIENT_ID = "https://127.0.0.1/oauth/client.json"
UNKNOWN = {"error": "invalid_request", "error_description": "Invalid client_id parameter value."}


def serve(document: bytes, content_type: str = "application/json") -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/oauth/client.json"
        return httpx2.Response(200, content=document, headers={"content-type": content_type})

    return httpx2.MockTransport(handler)


def document(**fields) -> bytes:
    return json.dumps(
        {
            "client_id": CLIENT_ID,
            "client_name": "Doc client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none",
            **fields,
        }
    ).encode()


@pytest.fixture
def sign_in(as_user) -> SignIn:
    cache.delete(_backoff_cache_key(CLIENT_ID))  # a failed fetch is not retried for a while
    flow = SignIn(as_user("acme_admin"))
    flow.client_id = CLIENT_ID
    yield flow
    cache.delete(_backoff_cache_key(CLIENT_ID))


def test_a_document_client_signs_in(sign_in, monkeypatch, acme):
    monkeypatch.setattr(EgressFetcher, "inner", serve(document()))
    page = sign_in.client.get(sign_in.authorize_url())
    assert page.status_code == 200, page.content
    assert (page.context["client_name"], page.context["unverified"]) == ("Doc client", True)
    assert sign_in.exchange(sign_in.code(acme.tenant.pk)).status_code == 200


def test_the_egress_policy_applies(sign_in, settings, monkeypatch, caplog):
    settings.WORKBENCH_EGRESS_ALLOW = []  # loopback is refused again
    monkeypatch.setattr(EgressFetcher, "inner", serve(document()))
    response = sign_in.client.get(sign_in.authorize_url())
    assert (response.status_code, response.json()) == (400, UNKNOWN)
    assert "could not fetch client_id document: the server could not be reached" in caplog.text


@pytest.mark.parametrize(
    ("served", "reason"),
    [
        (
            document(client_name="x" * 20000),  # past CIMD_MAX_DOCUMENT_SIZE (16 KiB)
            "client_id document exceeds the maximum allowed size",
        ),
        (
            document(redirect_uris=["http://evil.example.com/cb"]),
            "redirect URI 'http://evil.example.com/cb' is not allowed",
        ),
        (
            document(client_id="https://127.0.0.1/other.json"),
            "document client_id does not match the client_id URL",
        ),
    ],
)
def test_refused_documents(sign_in, monkeypatch, caplog, served, reason):
    monkeypatch.setattr(EgressFetcher, "inner", serve(served))
    response = sign_in.client.get(sign_in.authorize_url())
    assert (response.status_code, response.json()) == (400, UNKNOWN)
    assert reason in caplog.text
