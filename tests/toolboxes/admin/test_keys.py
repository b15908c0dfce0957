"""API keys in the admin: shown once, never again; revoking; scopes within the tenant."""

import re

import pytest
from django.db import connection
from django.urls import reverse

from kernel import credentials
from toolboxes.models import ApiKey, Tenant, Toolbox

KEY_RE = re.compile(r"wb_[a-z0-9]{8}_[A-Za-z0-9_-]{43}")


@pytest.fixture
def tenant(db):
    return Tenant.objects.create(slug="acme")


def create_key(admin_client, tenant, **fields):
    data = {"tenant": tenant.pk, "label": "ci", "expires_at_0": "", "expires_at_1": ""}
    data.update(fields)
    # Creating redirects to the key's hand-off page (tests/toolboxes/admin/test_key_handoff.py).
    return admin_client.post(reverse("admin:toolboxes_apikey_add"), data, follow=True)


def test_new_key_is_shown_once_and_never_again(admin_client, tenant):
    response = create_key(admin_client, tenant)
    assert response.status_code == 200
    html = response.content.decode()
    [full_key] = set(KEY_RE.findall(html))
    assert "will not be shown again" in html
    assert "no-store" in response["Cache-Control"]
    api_key = ApiKey.objects.get()
    assert api_key.matches(full_key)
    assert api_key.key_hash == credentials.hash_of(full_key)
    for url in (
        reverse("admin:toolboxes_apikey_change", args=[api_key.pk]),
        reverse("admin:toolboxes_apikey_changelist"),
        reverse("admin:toolboxes_tenant_change", args=[tenant.pk]),
    ):
        page = admin_client.get(url).content.decode()
        assert full_key not in page
        assert api_key.key_hash not in page
        assert f"wb_{api_key.prefix}_" in page
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM toolboxes_apikey")
        row = cursor.fetchone()
    assert full_key not in [str(value) for value in row]


def test_new_key_is_not_put_in_a_message_or_the_session(admin_client, tenant):
    response = create_key(admin_client, tenant)
    full_key = KEY_RE.search(response.content.decode()).group(0)
    assert full_key not in str(response.cookies)
    assert full_key not in str(dict(admin_client.session))


def test_changelist_shows_prefix_label_status_and_dates(admin_client, tenant):
    active, _ = ApiKey.issue(tenant, label="active one")
    revoked, _ = ApiKey.issue(tenant, label="old one")
    revoked.revoke()
    html = admin_client.get(reverse("admin:toolboxes_apikey_changelist")).content.decode()
    for text in (f"wb_{active.prefix}_", "active one", "old one", "revoked", "active"):
        assert text in html
    for header in ("Last used", "Expires", "Status"):
        assert f">{header}</a>" in html or f">{header}</span>" in html


def test_bulk_revoke_action(admin_client, tenant):
    first, _ = ApiKey.issue(tenant)
    second, _ = ApiKey.issue(tenant)
    response = admin_client.post(
        reverse("admin:toolboxes_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [first.pk, second.pk]},
        follow=True,
    )
    assert "Revoked 2 API key(s)." in response.content.decode()
    assert ApiKey.objects.filter(revoked_at__isnull=True).count() == 0


def test_single_revoke_asks_then_revokes(admin_client, tenant):
    api_key, _ = ApiKey.issue(tenant)
    url = reverse("admin:toolboxes_apikey_revoke", args=[api_key.pk])
    assert "Yes, revoke it" in admin_client.get(url).content.decode()
    api_key.refresh_from_db()
    assert api_key.revoked_at is None  # a GET changes nothing
    response = admin_client.post(url)
    assert response.status_code == 302
    api_key.refresh_from_db()
    assert api_key.status == "revoked"


def test_scope_must_be_the_tenants_own_toolboxes(admin_client, tenant):
    other = Tenant.objects.create(slug="other")
    foreign = Toolbox.objects.create(tenant=other, name="dev", description="d")
    own = Toolbox.objects.create(tenant=tenant, name="dev", description="d")
    response = create_key(admin_client, tenant, toolboxes=[foreign.pk])
    assert response.status_code == 200
    assert "belong to another tenant" in response.content.decode()
    assert ApiKey.objects.count() == 0
    create_key(admin_client, tenant, toolboxes=[own.pk])
    api_key = ApiKey.objects.get()
    assert list(api_key.toolboxes.all()) == [own]
    assert api_key.limited


def test_add_key_link_prefills_the_tenant(admin_client, tenant):
    page = admin_client.get(reverse("admin:toolboxes_tenant_change", args=[tenant.pk]))
    add_url = reverse("admin:toolboxes_apikey_add") + f"?tenant={tenant.pk}"
    assert add_url in page.content.decode()
    form = admin_client.get(add_url).content.decode()
    assert f'<option value="{tenant.pk}" selected>' in form
