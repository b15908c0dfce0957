"""add_member / remove_member, and the one-time password's change at the first login."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from accounts.middleware import FIRST_LOGIN_MESSAGE
from accounts.models import Membership


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().splitlines()


@pytest.fixture
def tenant(make_tenant):
    return make_tenant("acme")


def login(client: Client, username: str, password: str):
    return client.post(
        reverse("admin:login"),
        {"username": username, "password": password, "next": reverse("admin:index")},
    )


def test_new_user_gets_a_one_time_password_on_the_last_line(tenant):
    lines = run("add_member", "acme", "ada", "--role", "admin")
    password = lines[-1]
    assert len(password) >= 20 and " " not in password
    user = User.objects.get(username="ada")
    assert user.is_staff and not user.is_superuser and user.check_password(password)
    assert Membership.objects.get(user=user).role == "admin"


def test_first_login_must_change_the_one_time_password(client, tenant):
    password = run("add_member", "acme", "ada", "--role", "viewer")[-1]
    response = login(client, "ada", password)
    assert response.status_code == 302
    for url in (reverse("admin:index"), reverse("admin:toolboxes_toolbox_changelist")):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"] == reverse("admin:password_change")
    page = client.get(reverse("admin:password_change"), follow=True)
    assert FIRST_LOGIN_MESSAGE in page.content.decode()
    response = client.post(
        reverse("admin:password_change"),
        {
            "old_password": password,
            "new_password1": "a-new-long-passphrase-42",
            "new_password2": "a-new-long-passphrase-42",
        },
    )
    assert response.status_code == 302
    assert client.get(reverse("admin:index")).status_code == 200
    assert client.get(reverse("admin:toolboxes_toolbox_changelist")).status_code == 200


def test_existing_user_joins_without_a_new_password(tenant, make_tenant):
    User.objects.create_user("bob", password="pw-bob-12345")
    lines = run("add_member", "acme", "bob", "--role", "viewer")
    assert lines == ["bob is now viewer of acme."]
    bob = User.objects.get(username="bob")
    assert bob.is_staff and bob.check_password("pw-bob-12345")
    make_tenant("globex")
    run("add_member", "globex", "bob", "--role", "admin")
    run("add_member", "acme", "bob", "--role", "admin")  # a new role, not a second membership
    assert dict(bob.memberships.values_list("tenant__slug", "role")) == {
        "acme": "admin",
        "globex": "admin",
    }


def test_remove_member_and_staff_is_lost_with_the_last_membership(tenant, make_tenant):
    make_tenant("globex")
    run("add_member", "acme", "bob", "--role", "viewer")
    run("add_member", "globex", "bob", "--role", "viewer")
    assert run("remove_member", "acme", "bob") == ["bob is no longer a member of acme."]
    assert User.objects.get(username="bob").is_staff
    run("remove_member", "globex", "bob")
    assert not User.objects.get(username="bob").is_staff
    assert not Membership.objects.exists()


def test_command_errors(tenant):
    with pytest.raises(CommandError, match=re.escape("No tenant with slug 'nope'.")):
        run("add_member", "nope", "ada", "--role", "admin")
    with pytest.raises(CommandError, match=re.escape("'ada' is not a member of tenant 'acme'.")):
        run("remove_member", "acme", "ada")
    with pytest.raises(CommandError, match="invalid choice: 'owner'"):
        run("add_member", "acme", "ada", "--role", "owner")
