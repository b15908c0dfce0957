"""A real OpenID provider for the single sign-on tests (`tests/servers/oidc_provider.mjs`,
npm's certified `oidc-provider`), its control API, and a person's walk through its login
page with a plain HTTP client (the browser tests use Chromium instead)."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import httpx2
import pytest

from tests.harness.net import free_port, listening
from tests.harness.paths import ROOT, SERVERS
from tests.harness.procs import kill_tree
from tests.harness.waits import wait_until

OIDC_SERVER = SERVERS / "oidc_provider.mjs"
CLIENT_ID = "workbench"
CLIENT_SECRET = "test-client-secret-9c1d"
START_SECONDS = 20.0


@dataclass
class IdP:
    issuer: str
    process: subprocess.Popen[Any]

    def control(self, what: str, **body: Any) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.issuer}/control/{what}",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{what}: {exc.code} {exc.read().decode()}") from None

    def register(self, redirect_uris: list[str], backchannel_logout_uri: str = "") -> None:
        client: dict[str, Any] = {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "redirect_uris": redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }
        if backchannel_logout_uri:
            client["backchannel_logout_uri"] = backchannel_logout_uri
            client["backchannel_logout_session_required"] = True
        self.control("client", **client)

    def person(self, sub: str, groups: list[str], **claims: Any) -> None:
        self.control("account", sub=sub, groups=groups, email=f"{sub}@corp.example", **claims)

    def settings_entry(self, name: str = "corp", **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "title": "Corp IdP",
            "issuer": self.issuer,
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "scopes": "openid email profile groups",
            **extra,
        }


@contextmanager
def running_idp() -> Iterator[IdP]:
    node = shutil.which("node")
    if node is None or not (ROOT / "tests" / "node_modules" / "oidc-provider").is_dir():
        pytest.skip("Node or tests/node_modules/oidc-provider missing (make .venv/.test-installed)")
    port = free_port()
    process = subprocess.Popen(
        [node, str(OIDC_SERVER), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: listening(port), START_SECONDS, "the OpenID provider to listen")
        yield IdP(f"http://127.0.0.1:{port}", process)
    finally:
        kill_tree(process)


def sign_in_at_provider(authorize_url: str, login: str, until: str) -> str:
    """Follow the provider's redirects as a browser would, signing in as `login` on its
    page; the URL it finally sends back to (the first that starts with `until`)."""
    url = authorize_url
    with httpx2.Client(follow_redirects=False, timeout=10) as client:
        for _ in range(12):
            if url.startswith(until):
                return url
            response = client.get(url)
            if "/interaction/" in url and response.status_code == 200:  # its login page
                response = client.post(url, data={"login": login})
            location = response.headers.get("location")
            assert location, f"{url}: {response.status_code} {response.text[:300]}"
            url = urljoin(url, location)
    raise AssertionError(f"the provider never sent back to {until}")
