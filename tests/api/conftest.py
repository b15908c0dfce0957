"""The people and tenants of tests/accounts (an operator, acme's admin and viewer, globex's
admin, one who administers acme and views globex), each with a personal API token, and a
client that calls the API as one of them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from accounts.models import ApiToken
from tests.accounts.conftest import (  # noqa: F401
    OTHER_SECRET,
    SECRET,
    acme,
    as_user,
    globex,
    people,
)

_ = (acme, as_user, globex)

PLANTED = (SECRET, OTHER_SECRET)


class Api:
    """Calls /api/v1 with one token; every answer is checked for planted secrets."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.client = Client()

    def __call__(self, method: str, path: str, body: Any = None, **headers: str) -> Any:
        kwargs: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {self.token}"}
        kwargs.update({f"HTTP_{name.upper().replace('-', '_')}": v for name, v in headers.items()})
        if body is not None:
            kwargs["data"] = json.dumps(body)
            kwargs["content_type"] = "application/json"
        response = getattr(self.client, method.lower())(f"/api/v1{path}", **kwargs)
        text = response.content.decode()
        for secret in PLANTED:
            assert secret not in text, (method, path)
        return response


@pytest.fixture
def tokens(people: dict[str, User]) -> dict[str, str]:  # noqa: F811
    return {who: ApiToken.issue(user, name=f"{who}'s")[1] for who, user in people.items()}


@pytest.fixture
def api(tokens: dict[str, str]) -> Callable[[str], Api]:
    """api("acme_admin")("GET", "/tenants") -> the response."""
    return lambda who: Api(tokens[who])


def problem(response: Any, status: int, detail: str) -> dict[str, Any]:
    """Assert an RFC 9457 problem of `status` saying `detail`; return its body."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["detail"] == detail, body
    assert body["type"].startswith("urn:workbench:problem:") and body["title"]
    return body
