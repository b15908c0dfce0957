"""People: a user's membership (with its role) in a tenant, and one-time passwords.

The roles' names and what each may do are `kernel.roles`; the choices with their
descriptions are here.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from kernel.roles import ADMIN, VIEWER


class Role(models.TextChoices):
    ADMIN = ADMIN, "admin (manages the tenant's toolboxes, servers, keys and members)"
    VIEWER = VIEWER, "viewer (reads the configuration, never a secret)"


class Membership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(
        "toolboxes.Tenant", on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant__slug", "user__username"]
        verbose_name = "member"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "tenant"],
                name="membership_unique_per_tenant",
                violation_error_message="This user is already a member of this tenant.",
            ),
            models.CheckConstraint(
                condition=models.Q(role__in=Role.values), name="membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user.get_username()} in {self.tenant.slug} ({self.role})"


class OneTimePassword(models.Model):
    """A password handed out by `add_member` or the admin: it must be changed at the first
    login. It stays pending while the user's password hash is still the one recorded."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="one_time_password",
    )
    password_hash = models.CharField(max_length=256)
    created_at = models.DateTimeField(auto_now_add=True)

    def is_pending(self) -> bool:
        return self.password_hash == self.user.password


def member_refusal(user: Any, tenant_id: int, *, viewers_too: bool = False) -> str:
    """Why `user` may not act in the tenant as a member ("" while they may): inactive, not
    a member, or a viewer where only admins may (`/mcp`; `viewers_too`: the management API,
    which acts with the role, whichever). One rule for OAuth grants and personal keys."""
    if not user.is_active:
        return "inactive_user"
    role = (
        Membership.objects.filter(user_id=user.pk, tenant_id=tenant_id)
        .values_list("role", flat=True)
        .first()
    )
    if role is None:
        return "not_a_member"
    return "" if role == ADMIN or viewers_too else "viewer_role"
