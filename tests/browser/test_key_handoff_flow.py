"""In a real browser: an admin creates a key, copies it and a client's configuration from
its hand-off page, and reloads the page (the key is gone, no second key is made); the
copied configurations work: the Python and TypeScript snippets reach the live gateway."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from django.contrib.auth.models import User

from kernel.pins import definition
from tests.browser.test_tenant_admin_flow import login
from toolboxes import pins
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

# The admin in Chromium: the same flows whatever the test database (tests/accounts checks
# every admin path on both), so one pass runs them: the SQLite one.
pytestmark = pytest.mark.once

KEY_RE = re.compile(r"wb_[a-z0-9]{8}_[A-Za-z0-9_-]{43}")
PASSWORD = "pw-handoff-browser-1"
NODE_MODULES = Path(__file__).resolve().parent.parent / "node_modules"
SNIPPET_TIMEOUT = 60


@pytest.fixture
def acme(transactional_db):
    User.objects.create_superuser("olga", password=PASSWORD)
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    research = Toolbox.objects.create(tenant=tenant, name="research", description="Research tools")
    server = Server.objects.create(toolbox=research, name="search", command="search-mcp")
    # What the server offered when it was last connected (recorded for pinning).
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    offered = [
        definition(types.Tool(name=name, description=f"{name} the web", input_schema=schema))
        for name in ("search", "fetch", "summarize")
    ]
    pins.record_offer(server, "fp", offered)


def run(argv: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=SNIPPET_TIMEOUT, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_create_copy_reload_and_use_a_key(
    chromium, live_gateway, acme, plain_http_cookies, tmp_path
):
    base = live_gateway.url.removesuffix("/mcp")

    page = chromium.new_page(base, clipboard=True)

    def clipboard_after(button: str) -> str:
        page.click(button)
        page.wait_for_selector(f"{button}:has-text('Copied')")
        return page.evaluate("navigator.clipboard.readText()")

    def create_and_copy() -> dict[str, str]:
        login(page, "olga", PASSWORD)
        page.goto("/admin/toolboxes/apikey/add/")
        page.select_option("#id_tenant", label="Acme")
        page.fill("#id_label", "laptop")
        page.click("input[name=_save]")
        page.wait_for_selector("text=will not be shown again")
        copied = {"url": page.url, "key": clipboard_after("#copy-new-api-key")}
        copied["claude-code"] = clipboard_after("#copy-claude-code")
        for slug in ("python", "typescript"):
            page.click(f"#client-{slug} summary")
            copied[slug] = clipboard_after(f"#copy-{slug}")
        copied["gateway-url"] = page.inner_text("#gateway-url")
        return copied

    copied = chromium.run(create_and_copy)
    chromium.shot(page, "key-handoff-01-created-and-copied")
    api_key = ApiKey.objects.get()
    key = copied["key"]
    assert KEY_RE.fullmatch(key) and api_key.matches(key)
    assert copied["url"].endswith(f"/admin/toolboxes/apikey/{api_key.pk}/handoff/")
    # The request's own address, at the tenant's own endpoint (a load balancer places it).
    tenant_url = f"{live_gateway.url}/t/{api_key.tenant.slug}"
    assert copied["gateway-url"] == tenant_url
    assert copied["claude-code"] == (
        f"claude mcp add --transport http workbench {tenant_url} "
        f'--header "Authorization: Bearer {key}"'
    )

    def reload() -> str:
        page.reload()
        page.wait_for_selector("#key-not-shown")
        return page.content()

    again = chromium.run(reload)
    chromium.shot(page, "key-handoff-02-reloaded-key-gone")
    assert not KEY_RE.search(again)
    assert ApiKey.objects.count() == 1  # the reload made no second key

    def key_page() -> str:
        page.goto(f"/admin/toolboxes/apikey/{api_key.pk}/change/")
        return page.inner_text("#key-sees")

    sees = chromium.run(key_page)
    chromium.shot(page, "key-handoff-03-what-the-key-sees")
    assert "**research** (1 server): Research tools" in sees
    words = " ".join(sees.split())
    assert "Its toolboxes offer 3 tools" in words and "search, fetch, summarize" in words

    # The copied snippets, run as they are: each prints the instructions the key gets.
    printed = run([sys.executable, "-c", copied["python"]])
    assert "- **research** (1 server): Research tools" in printed
    if NODE_MODULES.joinpath("@modelcontextprotocol", "sdk").is_dir() and os.access(
        "/usr/bin/node", os.X_OK
    ):
        (tmp_path / "node_modules").symlink_to(NODE_MODULES)
        (tmp_path / "snippet.mjs").write_text(copied["typescript"])
        printed = run(["/usr/bin/node", "snippet.mjs"], cwd=tmp_path)
        assert "- **research** (1 server): Research tools" in printed
