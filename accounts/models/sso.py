"""Single sign-on's records: who signed in through which provider, which memberships its
groups gave, the operators' group mapping, the sessions a back-channel logout ends, and
the logout tokens already used (replays refused)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from accounts.models.members import Membership, Role


class SsoIdentity(models.Model):
    """A person at one provider: matched by issuer and `sub`, never by a name."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities"
    )
    provider = models.CharField(max_length=40, help_text="The provider's name in the settings.")
    issuer = models.CharField(max_length=255)
    subject = models.CharField("sub", max_length=255)
    email = models.CharField(max_length=254, blank=True)
    groups = models.JSONField("groups seen", default=list, blank=True)
    operator_from_groups = models.BooleanField(
        default=False, help_text="Made an operator by a group mapping (removed with it)."
    )
    created_at = models.DateTimeField("first sign-in", auto_now_add=True)
    last_sign_in_at = models.DateTimeField("last sign-in", null=True, blank=True)
    last_checked_at = models.DateTimeField("last checked", null=True, blank=True)
    logged_out_at = models.DateTimeField("last logged out by the provider", null=True, blank=True)
    # The last sign-in's tokens, encrypted (kernel.crypto), for the re-check of
    # providers without back-channel logout (accounts.sso.recheck); never shown.
    access_token = models.TextField(blank=True, editable=False)
    refresh_token = models.TextField(blank=True, editable=False)

    class Meta:
        verbose_name = "identity-provider sign-in"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique_sub")
        ]

    def __str__(self) -> str:
        return f"{self.provider}: {self.subject}"


class SsoMembership(models.Model):
    """A membership a provider's group gave: it follows the groups at every sign-in (a
    membership without one was added by hand and stays)."""

    membership = models.OneToOneField(
        Membership, on_delete=models.CASCADE, related_name="sso_source"
    )
    identity = models.ForeignKey(
        SsoIdentity, on_delete=models.CASCADE, related_name="memberships_given"
    )
    group = models.CharField(max_length=255, help_text="The group that gave it.")

    class Meta:
        verbose_name = "membership from a group"

    def __str__(self) -> str:
        return f"{self.group} → {self.membership.tenant.slug}"


OPERATORS_NEED_PROVIDER = (
    "A mapping to the operators must name its provider: a group of that name at any other "
    "provider would make operators too."
)


class SsoGroupMapping(models.Model):
    """A group (or a pattern: `*` and `?`) at a provider → a tenant with a role, or the
    operators group (at a named provider only: a row saved without one before that rule
    makes nobody an operator, and `accounts.system_checks` names it). Settings
    (`WORKBENCH_OIDC_GROUP_MAPPINGS`) add more for GitOps."""

    provider = models.CharField(
        max_length=40, blank=True, help_text="A provider's name; empty: every provider."
    )
    group = models.CharField(
        max_length=255, help_text="A group name, or a pattern with * and ? (e.g. wb-acme-*)."
    )
    tenant = models.ForeignKey(
        "toolboxes.Tenant",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="sso_group_mappings",
    )
    role = models.CharField(max_length=10, choices=Role, default=Role.VIEWER)
    operators = models.BooleanField(
        default=False, help_text="Members of the group are operators (every tenant)."
    )

    class Meta:
        ordering = ["provider", "group"]
        verbose_name = "group mapping"

    def clean(self) -> None:
        if bool(self.tenant_id) == bool(self.operators):
            raise ValidationError("Map the group either to a tenant or to the operators.")
        if self.operators and not self.provider:
            raise ValidationError({"provider": OPERATORS_NEED_PROVIDER})

    def __str__(self) -> str:
        target = "operators" if self.operators else f"{self.tenant} ({self.role})"
        return f"{self.group} → {target}"


class SsoSession(models.Model):
    """An admin session opened by a provider's sign-in: what a logout ends."""

    identity = models.ForeignKey(SsoIdentity, on_delete=models.CASCADE, related_name="sessions")
    session_key = models.CharField(max_length=40, db_index=True)
    sid = models.CharField(max_length=255, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)


class SsoLogoutToken(models.Model):
    """A logout token's `jti`, kept so that a replay of the token is refused."""

    issuer = models.CharField(max_length=255)
    jti = models.CharField(max_length=255)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "jti"], name="sso_logout_token_unique_jti")
        ]
