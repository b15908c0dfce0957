"""Tenants, their API keys and their toolboxes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from kernel.revocable import Revocable
from toolboxes import keys, versions
from toolboxes.validators import NAME_PATTERN, validate_name


class Tenant(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField("display name", max_length=200, blank=True)
    is_active = models.BooleanField("active", default=True)
    max_connections = models.PositiveIntegerField(
        "max live server connections",
        null=True,
        blank=True,
        help_text="Per gateway process. Empty: the default (WORKBENCH_TENANT_MAX_CONNECTIONS).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name or self.slug


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def usable(self) -> ApiKeyQuerySet:
        now = timezone.now()
        return self.filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now),
            revoked_at__isnull=True,
            tenant__is_active=True,
        )

    def revoke(self) -> int:
        """Revoke in bulk; `update()` sends no signals, so tell the readers here."""
        pending = self.filter(revoked_at__isnull=True)
        tenant_ids = set(pending.values_list("tenant_id", flat=True))
        count = pending.update(revoked_at=timezone.now())
        for tenant_id in tenant_ids:
            transaction.on_commit(lambda tenant_id=tenant_id: versions.bump(tenant_id))
        return count


class ApiKey(Revocable):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    label = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=8, unique=True, editable=False)
    key_hash = models.CharField("SHA-256 of the key", max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField("last used", null=True, blank=True, editable=False)
    expires_at = models.DateTimeField("expires", null=True, blank=True)
    toolboxes = models.ManyToManyField(
        "Toolbox",
        blank=True,
        related_name="+",
        help_text="Limit the key to these toolboxes. Empty: all of its tenant's toolboxes.",
    )
    # A personal key: its calls act as this member (connected accounts); none: the tenant's.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="api_keys",
        help_text="A personal key acts as this member, and stops working when the "
        "membership ends. Empty: the tenant's key.",
    )
    # The key's own limits (`toolboxes.key_limits`: who may set what); empty: the installation's.
    rate_limit = models.FloatField(
        "rate limit (use_tool)",
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="use_tool calls a second. Empty: the installation's WORKBENCH_KEY_RATE_LIMIT; "
        "0: no limit.",
    )
    rate_burst = models.PositiveIntegerField(
        "burst (use_tool)",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Calls at once before the rate applies. Empty: WORKBENCH_KEY_RATE_BURST.",
    )
    open_rate_limit = models.FloatField(
        "rate limit (open_toolbox)",
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="open_toolbox calls a second. Empty: the installation's "
        "WORKBENCH_OPEN_KEY_RATE_LIMIT; 0: no limit.",
    )
    open_rate_burst = models.PositiveIntegerField(
        "burst (open_toolbox)",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Opens at once before the rate applies. Empty: WORKBENCH_OPEN_KEY_RATE_BURST.",
    )
    # Set for good once toolboxes are chosen: a limited key whose toolboxes are all
    # deleted then sees none of them, instead of silently seeing every toolbox.
    limited = models.BooleanField(default=False, editable=False)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"wb_{self.prefix}_… ({self.label})" if self.label else f"wb_{self.prefix}_…"

    @classmethod
    def issue(
        cls,
        tenant: Tenant,
        *,
        label: str = "",
        toolboxes: list[Toolbox] | None = None,
        expires_in_days: int | None = None,
        owner: Any = None,
        **limits: float | int | None,
    ) -> tuple[ApiKey, str]:
        """Create a key (`limits`: its own, `toolboxes.key_limits`); the full key is
        returned here once and never stored."""
        api_key = cls(tenant=tenant, label=label, owner=owner, **limits)
        if expires_in_days is not None:
            api_key.expires_at = timezone.now() + timedelta(days=expires_in_days)
        full_key = api_key.assign_new_key()
        if toolboxes:
            api_key.toolboxes.set(toolboxes)  # marks it limited (toolboxes.signals)
        return api_key, full_key

    def assign_new_key(self) -> str:
        """Pick a unique prefix, set the hash, save; return the full key."""
        return keys.API_KEY.issue(self, "key_hash")

    def clean(self) -> None:
        """A personal key's owner is a member of its tenant (`memberships`: accounts')."""
        if self.owner_id is None or self.tenant_id is None:
            return
        if not self.tenant.memberships.filter(user_id=self.owner_id).exists():
            raise ValidationError(
                {"owner": "A personal key's owner must be a member of its tenant."}
            )

    def matches(self, full_key: str) -> bool:
        return keys.API_KEY.matches(full_key, self.key_hash)

    @property
    def status(self) -> str:
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= timezone.now():
            return "expired"
        if not self.tenant.is_active:
            return "tenant inactive"
        return "active"


class Toolbox(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="toolboxes")
    name = models.CharField(max_length=100, validators=[validate_name])
    description = models.TextField()
    # On by default: the endpoint grants nothing a key does not have through use_tool.
    offered_alone = models.BooleanField(
        "offered as an MCP server of its own",
        default=True,
        help_text=(
            "Its tools served as one MCP server's, at /mcp/t/(tenant)/toolboxes/(toolbox), "
            "to the keys that may open it."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant__slug", "name"]
        verbose_name_plural = "toolboxes"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "name"],
                name="toolbox_name_unique_per_tenant",
                violation_error_message="This tenant already has a toolbox of this name.",
            ),
            models.CheckConstraint(
                condition=Q(name__regex=NAME_PATTERN), name="toolbox_name_charset"
            ),
            models.CheckConstraint(
                condition=~Q(description=""), name="toolbox_description_required"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.name}"
