"""Adding and removing tenant members: one home for the command and the admin."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from accounts.models import Membership, OneTimePassword
from kernel.roles import ROLES, forget, is_operator
from toolboxes.models import Tenant

ONE_TIME_PASSWORD_BYTES = 18
# What a tenant admin hears for any existing account that is not already in the tenant:
# the same for everyone's (an operator's, another tenant's admin's, a deactivated user's).
NOT_AVAILABLE = "This username is not available: choose another one."


class NotAvailable(ValueError):
    """An existing account that this caller may not attach to a tenant."""


@dataclass(frozen=True)
class Added:
    membership: Membership
    created_user: bool
    one_time_password: str | None  # only for a user created here; shown once, never stored


def add_member(tenant: Tenant, username: str, role: str, *, attach_existing: bool = True) -> Added:
    """Make `username` a member of `tenant` with `role` (a new user gets a one-time
    password); an existing member's role is updated. Members log in to the admin.

    `attach_existing=False` (a tenant admin's invitation): an existing account belongs to
    someone, who never agreed to join, so only a new user may be created (NotAvailable)."""
    if role not in ROLES:
        raise ValueError(f"Unknown role {role!r}: choose one of {', '.join(ROLES)}.")
    user_model = get_user_model()
    password: str | None = None
    with transaction.atomic():
        user = user_model.objects.filter(**{user_model.USERNAME_FIELD: username}).first()
        created = user is None
        if (
            not created
            and not attach_existing
            and not Membership.objects.filter(user=user, tenant=tenant).exists()
        ):
            raise NotAvailable(NOT_AVAILABLE)
        if user is None:
            password = secrets.token_urlsafe(ONE_TIME_PASSWORD_BYTES)
            user = user_model.objects.create_user(username=username, password=password)
            OneTimePassword.objects.create(user=user, password_hash=user.password)
        if not user.is_staff:
            user.is_staff = True  # the admin's login asks for it; what it may see is the role's
            user.save(update_fields=["is_staff"])
        membership, _ = Membership.objects.update_or_create(
            user=user, tenant=tenant, defaults={"role": role}
        )
    return Added(membership, created, password)


def remove_member(membership: Membership) -> None:
    """Delete a membership; a user left with none (and no operator) loses the admin login."""
    user = membership.user
    with transaction.atomic():
        membership.delete()
        forget(user)
        if user.is_staff and not is_operator(user) and not user.memberships.exists():
            user.is_staff = False
            user.save(update_fields=["is_staff"])
