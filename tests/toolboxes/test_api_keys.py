"""API key material: format, hash only, verification, status."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from kernel import credentials
from toolboxes import keys
from toolboxes.models import ApiKey, Tenant


@pytest.fixture
def tenant(db):
    return Tenant.objects.create(slug="acme")


def test_format_and_strength(tenant):
    api_key, full_key = ApiKey.issue(tenant)
    assert keys.API_KEY.pattern.match(full_key)
    assert full_key.startswith(f"wb_{api_key.prefix}_")
    secret = full_key.split("_", 2)[2]
    assert len(secret) == 43  # 32 random bytes, base64url: 256 bits


def test_only_the_hash_is_stored(tenant):
    api_key, full_key = ApiKey.issue(tenant)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM toolboxes_apikey WHERE id = %s", [api_key.pk])
        row = [str(value) for value in cursor.fetchone()]
    assert credentials.hash_of(full_key) in row
    assert not any(full_key in value or full_key.split("_", 2)[2] in value for value in row)


def test_matches(tenant):
    api_key, full_key = ApiKey.issue(tenant)
    assert api_key.matches(full_key)
    assert not api_key.matches(full_key[:-1] + ("A" if full_key[-1] != "A" else "B"))


def test_status(tenant):
    api_key, _ = ApiKey.issue(tenant, expires_in_days=1)
    assert api_key.status == "active"
    api_key.expires_at = timezone.now() - timedelta(seconds=1)
    assert api_key.status == "expired"
    api_key.expires_at = None
    tenant.is_active = False
    assert api_key.status == "tenant inactive"
    api_key.revoke()
    assert api_key.status == "revoked"


def test_usable(tenant):
    usable, _ = ApiKey.issue(tenant)
    revoked, _ = ApiKey.issue(tenant)
    revoked.revoke()
    expired, _ = ApiKey.issue(tenant)
    ApiKey.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(days=1))
    other = Tenant.objects.create(slug="off", is_active=False)
    ApiKey.issue(other)
    assert list(ApiKey.objects.usable()) == [usable]


def test_prefix_collision_draws_again(tenant, monkeypatch):
    first, _ = ApiKey.issue(tenant)
    prefixes = iter([first.prefix, "zzzz9999"])
    monkeypatch.setattr(credentials, "new_prefix", lambda: next(prefixes))
    second, full_key = ApiKey.issue(tenant)
    assert second.prefix == "zzzz9999"
    assert second.matches(full_key)


def test_parse_prefix():
    assert keys.API_KEY.parse_prefix("wb_abcd1234_" + "x" * 43) == "abcd1234"
    assert keys.API_KEY.parse_prefix("wb_ABCD1234_" + "x" * 43) is None
    assert keys.API_KEY.parse_prefix("nonsense") is None
