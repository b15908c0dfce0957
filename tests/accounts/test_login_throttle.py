"""Admin logins: after the failure limit for one username from one address, that pair is
refused for the cool-off (django-axes); other usernames and addresses are unaffected."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

PASSWORD = "pw-correct-horse-1"


@pytest.fixture
def users(db):
    return [
        User.objects.create_user(name, password=PASSWORD, is_staff=True, is_superuser=True)
        for name in ("ann", "ben")
    ]


def attempt(username: str, password: str, address: str = "10.0.0.1"):
    client = Client(REMOTE_ADDR=address)
    response = client.post(
        reverse("admin:login"),
        {"username": username, "password": password, "next": reverse("admin:index")},
    )
    return response


def test_defaults_are_ten_failures_and_fifteen_minutes():
    assert settings.WORKBENCH_LOGIN_FAILURE_LIMIT == settings.AXES_FAILURE_LIMIT == 10
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]


def test_pair_is_locked_out_after_the_limit_and_only_that_pair(users, caplog):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt("ann", "wrong").status_code == 200  # the login form again
    assert attempt("ann", PASSWORD).status_code == 302  # still below the limit
    with caplog.at_level(logging.WARNING, logger="axes"):
        for _ in range(settings.AXES_FAILURE_LIMIT):
            attempt("ann", "wrong")
    refused = attempt("ann", PASSWORD)
    assert refused.status_code == 429
    assert "Too many failed logins for this username from your address" in refused.content.decode()
    assert any("Locking out" in record.getMessage() for record in caplog.records)
    assert attempt("ben", PASSWORD).status_code == 302  # another user, same address
    assert attempt("ann", PASSWORD, address="10.0.0.2").status_code == 302  # another address
