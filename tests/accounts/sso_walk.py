"""A person's sign-in through a provider, walked with Django's test client (the provider's
login page with a plain HTTP client: `tests.harness.oidc`), and a page's text as read."""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import urlsplit

from django.test import Client

from tests.harness.oidc import IdP, sign_in_at_provider

BASE = "http://testserver"


def callback_of(name: str) -> str:
    return f"{BASE}/sso/{name}/callback"


def sign_in(
    client: Client, login: str, tamper: str = "", idp: IdP | None = None, provider: str = "corp"
) -> Any:
    """The callback's answer once `login` signed in at the provider named `provider`."""
    start = client.get(f"/sso/{provider}/login", {"next": "/admin/"})
    assert start.status_code == 302, start.content
    back = sign_in_at_provider(start["Location"], login, callback_of(provider))
    if tamper and idp is not None:
        idp.control("tamper", mode=tamper)
    parts = urlsplit(back)
    return client.get(f"{parts.path}?{parts.query}")


def text_of(response: Any) -> str:
    return html.unescape(response.content.decode())
