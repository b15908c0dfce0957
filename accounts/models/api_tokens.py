"""A member's personal access token for the management API (`/api/v1`).

It acts with its owner's roles (`kernel.roles`), optionally narrowed to one tenant and
to reading; it expires, and can be revoked. The token itself is shown once, when made.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts import api_tokens
from kernel.revocable import Revocable

DEFAULT_DAYS = 90
MAX_DAYS = 366


def default_expiry() -> datetime:
    return timezone.now() + timedelta(days=DEFAULT_DAYS)


class ApiToken(Revocable):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=200, help_text="What the token is for.")
    prefix = models.CharField(max_length=8, unique=True, editable=False)
    token_hash = models.CharField("SHA-256 of the token", max_length=64, editable=False)
    tenant = models.ForeignKey(
        "toolboxes.Tenant",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        help_text="Limit the token to this tenant. Empty: every tenant its owner may see.",
    )
    read_only = models.BooleanField(
        "read-only", default=False, help_text="The token may read, never change anything."
    )
    expires_at = models.DateTimeField("expires", default=default_expiry)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField("last used", null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{api_tokens.API_TOKEN.marker}{self.prefix}_… ({self.name})"

    @classmethod
    def issue(
        cls,
        user: models.Model,
        *,
        name: str,
        tenant: models.Model | None = None,
        read_only: bool = False,
        expires_in_days: int = DEFAULT_DAYS,
    ) -> tuple[ApiToken, str]:
        """Create a token; the token is returned here once and never stored."""
        token = cls(
            user=user,
            name=name,
            tenant=tenant,
            read_only=read_only,
            expires_at=timezone.now() + timedelta(days=expires_in_days),
        )
        return token, token.assign_new_token()

    def assign_new_token(self) -> str:
        """Pick a unique prefix, set the hash, save; return the token."""
        return api_tokens.API_TOKEN.issue(self, "token_hash")

    @property
    def status(self) -> str:
        if self.revoked_at:
            return "revoked"
        if self.expires_at <= timezone.now():
            return "expired"
        return "active"
