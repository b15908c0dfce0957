"""A member's OAuth sign-in: which client may act for whom, in which tenant, on what.

django-oauth-toolkit keeps its own rows (the client, the authorization code, the access and
refresh tokens); `OAuthGrant` is the consent the member gave on the consent page, and
`OAuthGrantToken` ties each of DOT's rows to it, so that a token resolves to its grant and a
withdrawn grant, with its tokens, stops working.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models, transaction
from oauth2_provider.models import get_access_token_model, get_grant_model, get_refresh_token_model
from oauth2_provider.settings import oauth2_settings

from accounts.models.members import member_refusal
from accounts.oauth_config import API_SCOPE, MCP_SCOPE
from kernel.revocable import Revocable


class GrantScope(models.TextChoices):
    MCP = MCP_SCOPE, "mcp (the tenant's toolboxes through /mcp)"
    API = API_SCOPE, "api (the management API, with the member's roles)"


class OAuthGrant(Revocable):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oauth_grants"
    )
    tenant = models.ForeignKey(
        "toolboxes.Tenant", on_delete=models.CASCADE, related_name="oauth_grants"
    )
    application = models.ForeignKey(
        oauth2_settings.APPLICATION_MODEL,
        on_delete=models.CASCADE,
        related_name="workbench_grants",
        verbose_name="client",
    )
    toolboxes = models.ManyToManyField(
        "toolboxes.Toolbox",
        blank=True,
        related_name="+",
        help_text="The toolboxes the client may use. Empty: all of the tenant's toolboxes.",
    )
    # As for API keys: a limited grant whose toolboxes are all deleted sees none of them.
    limited = models.BooleanField(default=False, editable=False)
    # What its tokens are for: /mcp, or the management API (never both).
    scope = models.CharField(
        max_length=10, choices=GrantScope, default=GrantScope.MCP, editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The SHA-256 of the one code issued under this grant, kept after DOT deletes the code
    # on its exchange: a replay of it finds the grant to revoke (accounts.oauth_validator).
    code_checksum = models.CharField(max_length=64, blank=True, db_index=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "OAuth sign-in"

    def __str__(self) -> str:
        return f"{self.application} for {self.user.get_username()} in {self.tenant.slug}"

    @property
    def owner(self) -> str:
        """Whose open toolboxes a token of this grant uses (every token of it shares them)."""
        return f"grant:{self.pk}"

    def refusal(self) -> str:
        """Why this grant may no longer be used ("" while it may): the caller's reason.
        Asked afresh whenever the tenant's version moves (a role change moves it): a member
        made a viewer, who may not use /mcp (README "People and access"), is refused until
        made an admin again."""
        if self.revoked_at is not None:
            return "revoked_grant"
        # The management API acts with the role, whichever; /mcp is for admins.
        return member_refusal(self.user, self.tenant_id, viewers_too=self.scope != GrantScope.MCP)

    def revoke(self) -> None:
        """Withdraw the grant: its tokens stop working (the gateway hears of it through the
        tenant's version, `accounts.oauth_revocation`) and are deleted."""
        super().revoke()
        delete_tokens(self)


class OAuthGrantToken(models.Model):
    """One of DOT's rows (exactly one of the three) issued under a grant."""

    grant = models.ForeignKey(OAuthGrant, on_delete=models.CASCADE, related_name="issued")
    code = models.OneToOneField(
        oauth2_settings.GRANT_MODEL,
        null=True,
        on_delete=models.CASCADE,
        related_name="workbench_link",
    )
    access_token = models.OneToOneField(
        oauth2_settings.ACCESS_TOKEN_MODEL,
        null=True,
        on_delete=models.CASCADE,
        related_name="workbench_link",
    )
    refresh_token = models.OneToOneField(
        oauth2_settings.REFRESH_TOKEN_MODEL,
        null=True,
        on_delete=models.CASCADE,
        related_name="workbench_link",
    )

    class Meta:
        verbose_name = "OAuth grant token"


def delete_tokens(grant: OAuthGrant) -> None:
    """Delete every code and token issued under `grant` (their links go with them)."""
    with transaction.atomic():
        for model in (get_access_token_model(), get_refresh_token_model(), get_grant_model()):
            model.objects.filter(workbench_link__grant=grant).delete()
