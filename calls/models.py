"""The call log: one row per open_toolbox, use_tool and search_tools, written in batches by
the gateway (the gateway's call log, through `calls.writer`), kept for
WORKBENCH_CALL_LOG_RETENTION_DAYS."""

from __future__ import annotations

from django.db import models

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
        help_text="Whose connected account the call used: person:<user id>, tenant (shared), "
        "workbench (client credentials); never a token.",
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
