"""The stdio sandbox's settings, shared by a server and a catalog entry."""

from __future__ import annotations

from django.db import models

from toolboxes.validators import validate_egress_allow, validate_host_ports, validate_mounts

_LIMIT_HELP = "stdio: empty for the gateway's WORKBENCH_SANDBOX_* default."


class SandboxSettings(models.Model):
    """The stdio sandbox of a server or a catalog entry (README, "Security model"): host
    paths bound, network, limits."""

    mounts = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_mounts],
        help_text='stdio: host paths the server may see, e.g. [{"path": "/srv/data"}] '
        '(read-only) or [{"path": "/srv/out", "writable": true}].',
    )
    network = models.BooleanField(
        default=True,
        help_text="stdio: on reaches public addresses (and the allowance below); off reaches "
        "nothing.",
    )
    memory_limit_mb = models.PositiveIntegerField(
        "memory limit (MiB)", null=True, blank=True, help_text=_LIMIT_HELP
    )
    process_limit = models.PositiveIntegerField(
        "process limit", null=True, blank=True, help_text=_LIMIT_HELP
    )
    cpu_limit_seconds = models.PositiveIntegerField(
        "CPU time limit (seconds)", null=True, blank=True, help_text=_LIMIT_HELP
    )
    open_files_limit = models.PositiveIntegerField(
        "open files limit", null=True, blank=True, help_text=_LIMIT_HELP
    )
    egress_allow = models.JSONField(
        "network allowance",
        default=list,
        blank=True,
        validators=[validate_egress_allow],
        help_text="stdio: networks (CIDR) or host names the server may reach beyond public "
        'addresses, e.g. ["10.1.2.0/24", "db.internal"]; added to '
        "WORKBENCH_SANDBOX_EGRESS_ALLOW. Never the host's loopback: see host ports.",
    )
    host_ports = models.JSONField(
        "host ports",
        default=list,
        blank=True,
        validators=[validate_host_ports],
        help_text="stdio: TCP ports of this host's loopback the server may reach, e.g. "
        '["127.0.0.1:8080"]; inside the sandbox the host is 10.0.2.2 (10.0.2.2:8080).',
    )

    class Meta:
        abstract = True
