"""What every revocable credential has (API keys, personal API tokens, OAuth grants): the
moment it was revoked, and a revoke that keeps the first moment."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Revocable(models.Model):
    revoked_at = models.DateTimeField("revoked", null=True, blank=True, editable=False)

    class Meta:
        abstract = True

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])
