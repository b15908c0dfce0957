"""What a connected account keeps: its tokens (encrypted), the one-time link a client is
given, the sign-in flow between the vendor's redirect and the callback, and the clients
dynamically registered per issuer."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.db import models

from kernel import crypto

CONNECTED = "connected"
NEEDS_RECONNECT = "needs_reconnect"


class EncryptedJSON(models.TextField):
    """A JSON value encrypted at rest (Fernet, `kernel.crypto`)."""

    def get_prep_value(self, value: Any) -> Any:
        return crypto.encrypt(json.dumps(value)) if value is not None else None

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return json.loads(crypto.decrypt(value)) if value is not None else None


class SignIn(models.Model):
    """One server's tokens for one person (`user`), or for its tenant (`user` empty: the
    shared account or the client's own credentials)."""

    server = models.ForeignKey(
        "toolboxes.Server", on_delete=models.CASCADE, related_name="sign_ins"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="sign_ins",
    )
    status = models.CharField(
        max_length=20,
        choices=[(CONNECTED, "connected"), (NEEDS_RECONNECT, "needs reconnect")],
        default=CONNECTED,
    )
    tokens = EncryptedJSON(editable=False)
    account = models.CharField("connected as", max_length=200, blank=True)
    version = models.PositiveIntegerField(default=1, editable=False)
    # One refresh at a time across processes: a claim until then (`store.claim_refresh`).
    refreshing_until = models.FloatField(null=True, blank=True, editable=False)
    connected_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "connected account"
        constraints = [
            models.UniqueConstraint(fields=["server", "user"], name="sign_in_unique_per_person"),
            models.UniqueConstraint(
                fields=["server"],
                condition=models.Q(user__isnull=True),
                name="sign_in_unique_shared",
            ),
        ]

    def __str__(self) -> str:
        who = self.user.get_username() if self.user else "tenant"
        return f"{self.server} for {who}"


class ConnectLink(models.Model):
    """A one-time link that starts a person's sign-in to a server (`details.connect_url`):
    stored hashed, bound to the person and the server, expiring."""

    token_hash = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    server = models.ForeignKey("toolboxes.Server", on_delete=models.CASCADE, related_name="+")
    expires_at = models.FloatField()
    used_at = models.DateTimeField(null=True, blank=True)


class PendingSignIn(models.Model):
    """A sign-in between the vendor's redirect and Workbench's callback: its state (hashed),
    who started it, and the flow (PKCE verifier included, encrypted)."""

    state_hash = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    server = models.ForeignKey("toolboxes.Server", on_delete=models.CASCADE, related_name="+")
    shared = models.BooleanField(default=False)
    flow = EncryptedJSON()
    expires_at = models.FloatField()
    used_at = models.DateTimeField(null=True, blank=True)


class Registration(models.Model):
    """A client dynamically registered at an issuer for a redirect URI, kept for later
    sign-ins there (its secret encrypted)."""

    issuer = models.CharField(max_length=1000)
    redirect_uri = models.CharField(max_length=1000)
    client = EncryptedJSON()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "redirect_uri"], name="registration_unique_per_issuer"
            )
        ]
