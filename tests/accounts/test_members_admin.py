"""Tenant admins invite, re-role and remove their members in the admin; viewers read."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from accounts.admin.members import HANDOFF_KIND
from accounts.models import Membership
from kernel.admin_kit import handoff


def test_tenant_admin_invites_a_new_user_shown_a_one_time_password_once(as_user, acme, globex):
    """Handed over as a new key is: the add redirects (a reload adds nobody) to a page that
    shows the password once, never cached; it waits in the session encrypted."""
    client = as_user("acme_admin")
    response = client.post(
        reverse("admin:accounts_membership_add"),
        {"tenant": acme.tenant.pk, "username": "newbie", "role": "viewer"},
    )
    membership = Membership.objects.get(user__username="newbie")
    handoff_url = reverse("admin:accounts_membership_handoff", args=[membership.pk])
    assert (response.status_code, response["Location"]) == (302, handoff_url)
    held = client.session[handoff.session_key(HANDOFF_KIND)]
    assert held["id"] == membership.pk

    first = client.get(handoff_url)
    assert "no-store" in first["Cache-Control"]
    page = first.content.decode()
    [password] = re.findall(r'id="one-time-password" [^>]*value="([^"]+)"', page)
    assert password not in json.dumps(held)  # encrypted while it waited
    newbie = User.objects.get(username="newbie")
    assert newbie.is_staff and newbie.check_password(password)
    assert "Copy this one-time password now and hand it to newbie. It will not be shown" in page
    button = 'data-copy-target="one-time-password" id="copy-one-time-password">Copy the password<'
    assert button in page
    again = client.get(handoff_url).content.decode()  # a reload, or a second visit
    assert password not in again
    assert (
        "The one-time password of newbie was shown once, when the member was added, and "
        "cannot be shown again: only its hash is stored." in again
    )
    changelist = client.get(reverse("admin:accounts_membership_changelist")).content.decode()
    assert "newbie" in changelist and password not in changelist
    assert as_user("globex_admin").get(handoff_url).status_code == 404


def test_attaching_an_existing_user_shows_no_password_page(as_user, people, acme):
    client = as_user("operator")
    response = client.post(
        reverse("admin:accounts_membership_add"),
        {"tenant": acme.tenant.pk, "username": "gus", "role": "viewer"},
    )
    assert (response.status_code, response["Location"]) == (
        302,
        reverse("admin:accounts_membership_changelist"),
    )


def test_invite_refuses_another_tenant_and_duplicates(as_user, acme, globex):
    client = as_user("acme_admin")
    response = client.post(
        reverse("admin:accounts_membership_add"),
        {"tenant": globex.tenant.pk, "username": "spy", "role": "admin"},
    )
    assert "Select a valid choice" in response.content.decode()
    response = client.post(
        reverse("admin:accounts_membership_add"),
        {"tenant": acme.tenant.pk, "username": "vic", "role": "admin"},
    )
    assert "This user is already a member of this tenant." in response.content.decode()
    assert not User.objects.filter(username="spy").exists()


def test_tenant_admin_changes_a_role_and_removes_a_member(as_user, people, acme):
    client = as_user("acme_admin")
    membership = Membership.objects.get(user=people["acme_viewer"])
    url = reverse("admin:accounts_membership_change", args=[membership.pk])
    assert client.post(url, {"role": "admin"}).status_code == 302
    membership.refresh_from_db()
    assert membership.role == "admin"
    delete = reverse("admin:accounts_membership_delete", args=[membership.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 302
    assert not Membership.objects.filter(pk=membership.pk).exists()
    assert not User.objects.get(username="vic").is_staff


def test_viewer_reads_members_but_cannot_invite_or_change(as_user, people):
    client = as_user("acme_viewer")
    assert client.get(reverse("admin:accounts_membership_changelist")).status_code == 200
    assert client.get(reverse("admin:accounts_membership_add")).status_code == 403
    own = Membership.objects.get(user=people["acme_viewer"])
    url = reverse("admin:accounts_membership_change", args=[own.pk])
    assert client.post(url, {"role": "admin"}).status_code == 403
    own.refresh_from_db()
    assert own.role == "viewer"


def test_members_see_no_user_group_or_login_attempt_admin(as_user):
    html = as_user("acme_admin").get(reverse("admin:index")).content.decode()
    assert "Members" in html and "Toolboxes" in html
    for hidden in ("/admin/auth/user/", "/admin/auth/group/", "/admin/axes/"):
        assert hidden not in html
    assert as_user("acme_admin").get("/admin/auth/user/").status_code == 403


def test_tenant_admin_cannot_attach_an_existing_account(as_user, people, acme, globex):
    """The review's finding: a tenant admin added the superuser and another tenant's admin
    to its tenant, unasked, and the answers told existing usernames from new ones."""
    User.objects.create_superuser("root", password="pw-root-12345")
    User.objects.create_user("gone", password="pw-gone-12345", is_active=False)
    client = as_user("acme_admin")
    answers = set()
    for username in ("root", "olga", "gus", "gone"):
        response = client.post(
            reverse("admin:accounts_membership_add"),
            {"tenant": acme.tenant.pk, "username": username, "role": "admin"},
        )
        assert response.status_code == 200
        errors = response.context["adminform"].form.errors
        assert errors == {"username": ["This username is not available: choose another one."]}
        answers.add(response.content.decode().replace(username, "USERNAME"))
    # One answer, whoever's the account (the CSRF token aside, the same page).
    assert len({re.sub(r'value="[^"]{64}"', "", answer) for answer in answers}) == 1
    assert (
        not Membership.objects.filter(tenant=acme.tenant)
        .exclude(user__username__in=["ada", "vic", "max"])
        .exists()
    )
    assert not User.objects.get(username="gone").is_staff


def test_the_refusal_holds_in_add_member_too(acme, people):
    from accounts.members import NotAvailable, add_member

    with pytest.raises(NotAvailable) as refused:
        add_member(acme.tenant, "gus", "viewer", attach_existing=False)
    assert str(refused.value) == "This username is not available: choose another one."
    assert not Membership.objects.filter(user__username="gus", tenant=acme.tenant).exists()
    added = add_member(acme.tenant, "fresh", "viewer", attach_existing=False)
    assert added.created_user and added.one_time_password


def test_an_operator_still_attaches_an_existing_account(as_user, people, acme):
    client = as_user("operator")
    form = client.get(reverse("admin:accounts_membership_add")).context["adminform"].form
    assert form.fields["username"].help_text.startswith("An existing user joins this tenant")
    response = client.post(
        reverse("admin:accounts_membership_add"),
        {"tenant": acme.tenant.pk, "username": "gus", "role": "viewer"},
    )
    assert response.status_code == 302
    assert Membership.objects.get(user__username="gus", tenant=acme.tenant).role == "viewer"
