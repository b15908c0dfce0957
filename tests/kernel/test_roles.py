"""The roles' question (kernel.roles): memberships read once per user object through its
`memberships`, operators by group, and nothing for an inactive or anonymous user."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Membership, Role
from kernel.roles import (
    ADMIN,
    OPERATORS_GROUP,
    ROLES,
    VIEWER,
    can_manage,
    can_view,
    forget,
    is_operator,
    role_in,
    roles_of,
    tenant_ids,
)
from toolboxes.models import Tenant

pytestmark = pytest.mark.django_db


def test_the_role_names_are_the_memberships_choices():
    assert ROLES == (ADMIN, VIEWER) and set(Role.values) == set(ROLES)


def test_a_members_roles_are_read_once_then_remembered_until_forgotten():
    acme, globex = Tenant.objects.create(slug="acme"), Tenant.objects.create(slug="globex")
    user = User.objects.create_user("max")
    Membership.objects.create(user=user, tenant=acme, role=ADMIN)
    Membership.objects.create(user=user, tenant=globex, role=VIEWER)
    with CaptureQueriesContext(connection) as queries:
        assert roles_of(user) == {acme.pk: ADMIN, globex.pk: VIEWER}
        assert tenant_ids(user, (ADMIN,)) == {acme.pk} and role_in(user, globex.pk) == VIEWER
        assert can_manage(user, acme.pk) and not can_manage(user, globex.pk)
        assert can_view(user, globex.pk) and not is_operator(user)
    assert len(queries) == 2  # the memberships once, the operators' group once
    Membership.objects.filter(user=user, tenant=globex).delete()
    assert role_in(user, globex.pk) == VIEWER  # remembered on this user object
    forget(user)
    assert roles_of(user) == {acme.pk: ADMIN}


def test_operators_by_group_and_nobody_when_inactive_or_anonymous():
    acme = Tenant.objects.create(slug="acme")
    olga = User.objects.create_user("olga")
    olga.groups.add(Group.objects.get_or_create(name=OPERATORS_GROUP)[0])
    assert is_operator(olga) and can_manage(olga, acme.pk) and tenant_ids(olga) == set()
    gone = User.objects.create_user("gone", is_active=False)
    Membership.objects.create(user=gone, tenant=acme, role=ADMIN)
    assert roles_of(gone) == {} and not can_view(gone, acme.pk)
    assert roles_of(AnonymousUser()) == {} and not is_operator(AnonymousUser())
