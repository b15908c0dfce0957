"""Issue 31, finding 1 in the catalog's admin: an entry's OAuth client secret was shown in
clear on its page (a JSON box). It is write-only there as on a server's page: its name with
a placeholder, kept when left empty, replaced when typed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from toolboxes.models import AuthMode, CatalogEntry

CLIENT_SECRET = "entry-client-secret-never-shown"


@pytest.fixture
def entry(db):
    return CatalogEntry.objects.create(
        name="io.example/vendor",
        transport="streamable-http",
        url="https://vendor.example.com/mcp",
        auth=AuthMode.OAUTH_SHARED,
        oauth_client={"client_id": "cid", "client_secret": CLIENT_SECRET},
    )


def entry_post(**fields: str) -> dict[str, str]:
    data = {
        "name": "io.example/vendor",
        "title": "",
        "description": "",
        "transport": "streamable-http",
        "command": "",
        "cwd": "",
        "args": "[]",
        "env": "{}",
        "url": "https://vendor.example.com/mcp",
        "headers": "{}",
        "auth": "oauth_shared",
        "oauth_client__rows": "3",
        "oauth_client__name__0": "client_id",
        "oauth_client__value__0": "",
        "oauth_client__name__1": "client_secret",
        "oauth_client__value__1": "",
        "oauth_scopes": "",
        "mounts": "[]",
        "network": "on",
        "parameters-TOTAL_FORMS": "0",
        "parameters-INITIAL_FORMS": "0",
        "parameters-MIN_NUM_FORMS": "0",
        "parameters-MAX_NUM_FORMS": "1000",
    }
    return data | fields


def test_the_entrys_client_secret_is_write_only(admin_client, entry):
    url = reverse("admin:toolboxes_catalogentry_change", args=[entry.pk])
    page = admin_client.get(url).content.decode()
    assert CLIENT_SECRET not in page
    assert 'name="oauth_client__name__1" value="client_secret"' in page
    assert admin_client.post(url, entry_post(oauth_scopes="read")).status_code == 302
    entry.refresh_from_db()
    assert entry.oauth_client_values() == {"client_id": "cid", "client_secret": CLIENT_SECRET}
    assert entry.oauth_scopes == "read"
    typed = entry_post(oauth_client__value__1="new-secret")
    assert admin_client.post(url, typed).status_code == 302
    entry.refresh_from_db()
    assert entry.oauth_client_values()["client_secret"] == "new-secret"
