"""A member's OAuth sign-in driven with Django's test client (register, log in, consent,
exchange), for the OAuth tests of `tests/accounts/` and `tests/e2e/`."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.test import Client

REDIRECT_URI = "http://127.0.0.1:33418/callback"
BASE = "http://testserver"
RESOURCE = BASE + "/mcp"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.decode().rstrip("=")


def query_of(location: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


@dataclass
class SignIn:
    """One client registered and one member signing it in."""

    client: Client
    client_id: str = ""
    verifier: str = ""
    state: str = field(default_factory=lambda: secrets.token_urlsafe(8))

    def register(self, **metadata: Any) -> Any:
        body = {
            "client_name": "Claude",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **metadata,
        }
        response = self.client.post(
            "/oauth/register", json.dumps(body), content_type="application/json"
        )
        if response.status_code == 201:
            self.client_id = response.json()["client_id"]
        return response

    def authorize_url(self, **overrides: str) -> str:
        self.verifier, challenge = pkce()
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": REDIRECT_URI,
            "state": self.state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": RESOURCE,
            "scope": "mcp",
            **overrides,
        }
        return "/oauth/authorize?" + urlencode({k: v for k, v in params.items() if v is not None})

    def consent(self, url: str, tenant: int, toolboxes: list[int] = (), allow: bool = True):
        """GET the consent page, then POST the form it shows (hidden fields included)."""
        page = self.client.get(url)
        assert page.status_code == 200, page.content
        form = page.context["form"]
        data = {name: form[name].value() or "" for name in form.fields if form[name].is_hidden}
        data.update(tenant=str(tenant), toolboxes=[str(pk) for pk in toolboxes])
        if allow:
            data["allow"] = "Allow"
        return self.client.post(url, data)

    def code(self, tenant: int, toolboxes: list[int] = (), **overrides: str) -> str:
        response = self.consent(self.authorize_url(**overrides), tenant, toolboxes)
        assert response.status_code == 302, response.content
        query = query_of(response["Location"])
        assert query.get("state") == self.state, query
        assert query.get("iss") == BASE, query  # RFC 9207
        return query["code"]

    def exchange(self, code: str, **overrides: str | None) -> Any:
        data = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "client_id": self.client_id,
            "code_verifier": self.verifier,
            "resource": RESOURCE,
            **overrides,
        }
        return self.client.post("/oauth/token", {k: v for k, v in data.items() if v is not None})

    def refresh(self, refresh_token: str, **overrides: str) -> Any:
        data = {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": self.client_id,
            "resource": RESOURCE,
            **overrides,
        }
        return self.client.post("/oauth/token", data)

    def tokens(self, tenant: int, toolboxes: list[int] = ()) -> dict[str, Any]:
        response = self.exchange(self.code(tenant, toolboxes))
        assert response.status_code == 200, response.content
        return response.json()
