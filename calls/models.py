"""The call log: one row per open_toolbox, use_tool and search_tools, written in batches by
the gateway (the gateway's call log, through `calls.writer`), kept for
WORKBENCH_CALL_LOG_RETENTION_DAYS; and the calls held for a person's approval."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from kernel import approvals
from toolboxes.models import ApiKey, Tenant


class CallRecord(models.Model):
    at = models.DateTimeField("time", db_index=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="calls")
    key = models.ForeignKey(
        ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="calls"
    )
    key_prefix = models.CharField(max_length=64, blank=True)
    member = models.CharField("OAuth member", max_length=200, blank=True)
    client_name = models.CharField(max_length=200, blank=True)
    client_version = models.CharField(max_length=100, blank=True)
    session_id = models.CharField(max_length=100, blank=True)
    meta_tool = models.CharField(max_length=20)
    toolbox = models.CharField(max_length=200, blank=True)
    server = models.CharField(max_length=200, blank=True)
    tool = models.CharField(max_length=200, blank=True)
    signed_in_as = models.CharField(
        "signed in as",
        max_length=40,
        blank=True,
        help_text="Whose connected account the call used: person:N (N: the member's user id), "
        "tenant (shared), workbench (client credentials); never a token.",
    )
    decision = models.CharField(
        "tool policy",
        max_length=200,
        blank=True,
        help_text="What the tenant's tool policies decided, where a rule or default applied "
        "(\"denied by: toolbox 'prod', role viewer\"; open_toolbox: the tools left out).",
    )
    duration_ms = models.FloatField("duration (ms)")
    outcome = models.CharField(
        max_length=40, help_text="ok, tool_error (the tool said isError) or an error code"
    )
    error_code = models.CharField(max_length=40, blank=True)
    incident = models.CharField("incident id", max_length=40, blank=True, db_index=True)
    bytes_in = models.PositiveIntegerField(default=0)
    bytes_out = models.PositiveIntegerField(default=0)
    # Only for tenants that opted in (PayloadCapture), size-capped, secrets redacted.
    arguments = models.TextField(blank=True)
    result = models.TextField(blank=True)

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["tenant", "-at"], name="calls_tenant_at")]

    def __str__(self) -> str:
        what = "/".join(part for part in (self.toolbox, self.server, self.tool) if part)
        return f"{self.meta_tool} {what} ({self.outcome})"


class PayloadCapture(models.Model):
    """A tenant's opt-in: its calls' arguments and results are kept too (capped in size,
    with the server's secret values redacted)."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="payload_capture")
    enabled = models.BooleanField(default=True)

    class Meta:
        verbose_name = "payload capture opt-in"

    def __str__(self) -> str:
        return f"{self.tenant} ({'on' if self.enabled else 'off'})"


def new_public_id() -> str:
    """The approval page's address part: unguessable, though the page also asks who is
    signed in (an approval is decided by a person allowed to, never by the link alone)."""
    return secrets.token_urlsafe(24)


class Approval(models.Model):
    """A call held for a person's approval (an "ask" rule, `kernel.approvals`), bound to
    the caller, the tool and the digest of its exact arguments; approved, it runs once."""

    class Status(models.TextChoices):
        PENDING = approvals.PENDING, "waiting"
        APPROVED = approvals.APPROVED, "approved"
        REFUSED = approvals.REFUSED, "refused"
        EXPIRED = approvals.EXPIRED, "expired"
        USED = approvals.USED, "approved and run"

    public_id = models.CharField(max_length=40, unique=True, default=new_public_id)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="approvals")
    caller = models.CharField(
        max_length=40, help_text="The credential that called: key:N or grant:N (N: its id)."
    )
    caller_label = models.CharField(
        "caller", max_length=200, help_text="How approvers see the caller (never a secret)."
    )
    caller_person = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="own_held_calls",
        help_text="The member the call acts as (none: a tenant key).",
    )
    key = models.ForeignKey(
        ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="approvals"
    )
    toolbox = models.CharField(max_length=200)
    server = models.CharField(max_length=200)
    tool = models.CharField(max_length=200)
    arguments_digest = models.CharField(max_length=64, help_text="SHA-256, canonical JSON.")
    arguments_shown = models.TextField(
        "arguments", blank=True, help_text="As approvers see them: secrets masked, size-capped."
    )
    reason = models.CharField(
        "tool policy", max_length=200, help_text="The rule or default that asked."
    )
    self_approval = models.BooleanField(default=False)
    approvers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="approvals_to_decide"
    )
    status = models.CharField(max_length=10, choices=Status, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="approvals_decided",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_from = models.CharField("decided from", max_length=100, blank=True)
    used_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the approved call ran (or, for a call whose server asked for input, "
        "its retry did).",
    )
    # A refusal or an expiry is told to the caller once (APPROVAL_DENIED); the next call
    # with the same arguments asks again.
    told = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["tenant", "caller", "arguments_digest"], name="calls_approval_call"
            ),
            models.Index(fields=["status", "expires_at"], name="calls_approval_due"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=approvals.STATUSES), name="approval_status_valid"
            )
        ]

    def __str__(self) -> str:
        return f"{self.toolbox}/{self.server}/{self.tool} by {self.caller_label} ({self.status})"
