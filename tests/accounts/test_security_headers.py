"""Every page of the site carries a Content-Security-Policy (scripts from its own files
only); HSTS goes with every response served over HTTPS."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.oauth_consent import csp_source
from tests.accounts.oauth_client import SignIn

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; "
    "base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)


@pytest.mark.parametrize("path", ["/admin/login/", "/admin/", "/oauth/authorize", "/healthz"])
def test_every_page_has_the_policy(db, path):
    """The review's finding: no CSP on the admin."""
    assert Client().get(path)["Content-Security-Policy"] == POLICY


def test_the_admin_pages_are_under_it(as_user, acme):
    client = as_user("acme_admin")
    for path in ("/admin/", "/admin/toolboxes/toolbox/", "/admin/accounts/membership/add/"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response["Content-Security-Policy"] == POLICY, path
        assert "<script>" not in response.content.decode(), path  # no inline script


def test_hsts_over_https_only(db, settings):
    """The review's finding: no HSTS. A year by default (DEBUG off)."""
    assert settings.SECURE_HSTS_SECONDS == 31536000
    assert "Strict-Transport-Security" not in Client().get("/admin/login/")
    secure = Client().get("/admin/login/", secure=True)
    assert secure["Strict-Transport-Security"] == "max-age=31536000"
    settings.SECURE_HSTS_SECONDS = 0
    assert "Strict-Transport-Security" not in Client().get("/admin/login/", secure=True)


def test_the_consent_page_may_send_its_answer_to_the_client(as_user, acme):
    """Browsers check form-action on the redirect that follows a form: the consent page
    names the client's redirect URI (and only that page does)."""
    flow = SignIn(as_user("acme_admin"))
    assert flow.register().status_code == 201
    page = flow.client.get(flow.authorize_url())
    assert page.status_code == 200
    assert page["Content-Security-Policy"] == POLICY.replace(
        "form-action 'self'", "form-action 'self' http://127.0.0.1:33418"
    )


@pytest.mark.parametrize(
    ("uri", "source"),
    [
        ("https://claude.ai/api/mcp/auth_callback", "https://claude.ai"),
        ("http://localhost:6274/cb?x=1", "http://localhost:6274"),
        ("http://[::1]:1/cb", "http:"),  # an IPv6 literal: its scheme alone
        ("cursor://anysphere.cursor-retrieval/cb", "cursor://anysphere.cursor-retrieval"),
        ("com.example.app:/cb", "com.example.app:"),
        ("", ""),
        ("https://x.example:99999/cb", ""),
    ],
)
def test_csp_source_of_a_redirect_uri(uri, source):
    assert csp_source(uri) == source
