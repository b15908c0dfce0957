"""How the gateway signs in to a remote server, shared by servers and catalog entries:
the mode (connected accounts, `connections`), an admin-entered OAuth client, the scopes."""

from __future__ import annotations

from typing import Any

from django.db import models

from toolboxes.fields import EncryptedStringMapField

STDIO = "stdio"


class AuthMode(models.TextChoices):
    """How the gateway authenticates to a remote server (connected accounts: `connections`)."""

    NONE = "none", "none"
    HEADERS = "headers", "static headers"
    OAUTH_PERSON = "oauth_person", "OAuth, each person signs in"
    OAUTH_SHARED = "oauth_shared", "OAuth, one sign-in shared by the tenant"
    CLIENT_CREDENTIALS = "client_credentials", "OAuth client credentials (no person)"


OAUTH_MODES = (AuthMode.OAUTH_PERSON, AuthMode.OAUTH_SHARED, AuthMode.CLIENT_CREDENTIALS)
# The names an admin-entered OAuth client may hold (`Server.oauth_client`).
OAUTH_CLIENT_NAMES = ("client_id", "client_secret")


class SignInSettings(models.Model):
    """A remote server's sign-in (a catalog entry's, for the servers made from it)."""

    auth = models.CharField(
        "sign-in",
        max_length=20,
        choices=AuthMode,
        default=AuthMode.NONE,
        help_text="remote: how the gateway signs in to the server.",
    )
    oauth_client = EncryptedStringMapField(
        "OAuth client",
        default=dict,
        blank=True,
        help_text="OAuth: client_id and client_secret registered at the server's authorization "
        "server, for servers that offer neither client metadata documents nor registration "
        "(the secret is encrypted at rest).",
    )
    oauth_scopes = models.CharField(
        "OAuth scopes", max_length=500, blank=True, help_text="OAuth: scopes to ask for."
    )
    transport: Any
    headers: Any

    class Meta:
        abstract = True

    def oauth_client_values(self) -> dict[str, str]:
        """The admin-entered OAuth client (`client_id`, `client_secret`), decrypted."""
        return dict(self.oauth_client or {})

    def sign_in_errors(self) -> dict[str, str]:
        """The sign-in mode against the transport, headers and OAuth client."""
        errors: dict[str, str] = {}
        oauth = self.auth in OAUTH_MODES
        if self.transport == STDIO:
            if self.auth != AuthMode.NONE:
                errors["auth"] = "Only remote servers sign in."
        elif self.auth == AuthMode.NONE and self.headers:
            self.auth = AuthMode.HEADERS  # headers given are static headers: say so
        elif oauth and any(name.lower() == "authorization" for name in self.headers or {}):
            errors["headers"] = "A server signed in with OAuth takes no Authorization header."
        client = self.oauth_client_values()
        unknown = sorted(set(client) - set(OAUTH_CLIENT_NAMES))
        if unknown:
            errors["oauth_client"] = (
                f"Unknown name {', '.join(unknown)}: give client_id and client_secret."
            )
        elif client and not oauth:
            errors["oauth_client"] = "Only servers signed in with OAuth have an OAuth client."
        elif client.get("client_secret") and not client.get("client_id"):
            errors["oauth_client"] = "A client secret needs its client_id."
        elif self.auth == AuthMode.CLIENT_CREDENTIALS and not client.get("client_secret"):
            errors["oauth_client"] = "Client credentials need a client_id and client_secret."
        if self.oauth_scopes and not oauth:
            errors["oauth_scopes"] = "Only servers signed in with OAuth have scopes."
        return errors
