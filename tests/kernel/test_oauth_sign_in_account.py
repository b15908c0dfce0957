"""Whom a connected account is, as the vendor's token response says it (display only)."""

from __future__ import annotations

import base64
import json

import pytest

from kernel.oauth_sign_in import account_of


def id_token(claims: dict[str, str]) -> str:
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJub25lIn0.{payload}."


@pytest.mark.parametrize(
    ("body", "account"),
    [
        ({"id_token": id_token({"sub": "1", "preferred_username": "ada"})}, "ada"),
        ({"id_token": id_token({"sub": "1", "email": "ada@example.com"})}, "ada@example.com"),
        ({"access_token": "x", "login": "ada-gh"}, "ada-gh"),
        ({"id_token": "not.a-jwt!.", "username": "ada"}, "ada"),
        ({"access_token": "x"}, ""),  # the MCP authorization spec's response names nobody
        ([], ""),
    ],
)
def test_the_account_a_token_response_names(body, account):
    assert account_of(body) == account
