"""The admins' configuration: tenants, their API keys, toolboxes and downstream servers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.db.models.signals import m2m_changed
from django.dispatch import receiver
from django.utils import timezone

from toolboxes import keys
from toolboxes.fields import EncryptedStringMapField
from toolboxes.validators import (
    NAME_PATTERN,
    validate_args,
    validate_egress_allow,
    validate_env,
    validate_headers,
    validate_mounts,
    validate_name,
    validate_remote_url,
    validate_tool_filters,
)

_LIMIT_HELP = "stdio: empty for the gateway's WORKBENCH_SANDBOX_* default."


def default_tool_filters() -> list[str]:
    return ["*"]


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
        'addresses, e.g. ["10.1.2.0/24", "db.internal"]; added to WORKBENCH_EGRESS_ALLOW.',
    )

    class Meta:
        abstract = True


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
        from toolboxes import versions

        pending = self.filter(revoked_at__isnull=True)
        tenant_ids = set(pending.values_list("tenant_id", flat=True))
        count = pending.update(revoked_at=timezone.now())
        for tenant_id in tenant_ids:
            transaction.on_commit(lambda tenant_id=tenant_id: versions.bump(tenant_id))
        return count


class ApiKey(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    label = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=8, unique=True, editable=False)
    key_hash = models.CharField("SHA-256 of the key", max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField("last used", null=True, blank=True, editable=False)
    expires_at = models.DateTimeField("expires", null=True, blank=True)
    revoked_at = models.DateTimeField("revoked", null=True, blank=True, editable=False)
    toolboxes = models.ManyToManyField(
        "Toolbox",
        blank=True,
        related_name="+",
        help_text="Limit the key to these toolboxes. Empty: all of its tenant's toolboxes.",
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
    ) -> tuple[ApiKey, str]:
        """Create a key; the full key is returned here once and never stored."""
        api_key = cls(tenant=tenant, label=label)
        if expires_in_days is not None:
            api_key.expires_at = timezone.now() + timedelta(days=expires_in_days)
        full_key = api_key.assign_new_key()
        if toolboxes:
            api_key.toolboxes.set(toolboxes)  # marks it limited (_mark_limited)
        return api_key, full_key

    def assign_new_key(self) -> str:
        """Pick a unique prefix, set the hash, save; return the full key."""
        for _ in range(10):
            self.prefix = keys.new_prefix()
            full_key = keys.new_key(self.prefix)
            self.key_hash = keys.hash_key(full_key)
            try:
                with transaction.atomic():
                    self.save()
            except IntegrityError:
                if ApiKey.objects.filter(prefix=self.prefix).exists():
                    continue  # a prefix collision: draw again
                raise
            return full_key
        raise RuntimeError("Could not find a free API key prefix")

    def matches(self, full_key: str) -> bool:
        return keys.hashes_match(full_key, self.key_hash)

    @property
    def status(self) -> str:
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= timezone.now():
            return "expired"
        if not self.tenant.is_active:
            return "tenant inactive"
        return "active"

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])


@receiver(m2m_changed, sender=ApiKey.toolboxes.through)
def _mark_limited(sender: type, instance: Any, action: str, **kwargs: Any) -> None:
    if action == "post_add" and isinstance(instance, ApiKey) and not instance.limited:
        instance.limited = True
        ApiKey.objects.filter(pk=instance.pk).update(limited=True)


class Toolbox(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="toolboxes")
    name = models.CharField(max_length=100, validators=[validate_name])
    description = models.TextField()
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


class Transport(models.TextChoices):
    STDIO = "stdio", "stdio (local command)"
    STREAMABLE_HTTP = "streamable-http", "Streamable HTTP"
    SSE = "sse", "SSE (legacy)"


REMOTE_TRANSPORTS = (Transport.STREAMABLE_HTTP, Transport.SSE)


class PinningPolicy(models.TextChoices):
    """How a server's tool definitions are pinned (the rules: mcp_gateway.pins)."""

    TRUST_FIRST = "trust-first", "trust first: approve the first offer, hold later changes"
    APPROVE_ALL = "approve-all", "approve all: hold every tool until an admin approves it"
    OFF = "off", "off: no pinning"


class Server(SandboxSettings):
    toolbox = models.ForeignKey(Toolbox, on_delete=models.CASCADE, related_name="servers")
    name = models.CharField(max_length=100, validators=[validate_name])
    position = models.PositiveIntegerField(default=0, help_text="Order within the toolbox.")
    transport = models.CharField(max_length=20, choices=Transport, default=Transport.STDIO)
    command = models.CharField(max_length=1000, blank=True, help_text="stdio: the program.")
    args = models.JSONField(
        default=list, blank=True, validators=[validate_args], help_text="stdio: list of strings."
    )
    env = EncryptedStringMapField(
        default=dict,
        blank=True,
        validators=[validate_env],
        help_text="stdio: environment variables (values are encrypted at rest).",
    )
    cwd = models.CharField("working directory", max_length=1000, blank=True)
    url = models.CharField("URL", max_length=2000, blank=True, help_text="remote: http(s) URL.")
    headers = EncryptedStringMapField(
        default=dict,
        blank=True,
        validators=[validate_headers],
        help_text="remote: HTTP headers (values are encrypted at rest).",
    )
    tool_filters = models.JSONField(
        default=default_tool_filters,
        blank=True,
        validators=[validate_tool_filters],
        help_text='Tools to expose: ["*"] all, a list of names, [] none.',
    )
    timeout = models.PositiveIntegerField(
        "timeout (seconds)", default=60, help_text="Per-call timeout."
    )
    idle_timeout = models.PositiveIntegerField(
        "idle timeout (seconds)",
        null=True,
        blank=True,
        help_text="Close the connection after this long unused (reopened on demand). "
        "Empty: the gateway's WORKBENCH_IDLE_CONNECTION_SECONDS.",
    )
    # Made from a catalog entry: the entry gives transport, command, args, env, URL, headers
    # and sandbox (`toolboxes.catalog.launch_of`); these hold the tenant's parameter values.
    catalog_entry = models.ForeignKey(
        "CatalogEntry",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="servers",
        verbose_name="catalog entry",
    )
    parameters = models.JSONField(default=dict, blank=True, editable=False)
    secret_parameters = EncryptedStringMapField(default=dict, blank=True, editable=False)
    pinning = models.CharField(
        "tool pinning",
        max_length=20,
        choices=PinningPolicy,
        default=PinningPolicy.TRUST_FIRST,
        help_text="Hold tools whose definitions are new or changed until an admin approves.",
    )
    enabled = models.BooleanField(default=True)
    # The last connect's result, from an admin's check or the gateway's own connects
    # (`toolboxes.checks`); written with update(), so no configuration version moves.
    last_check_ok = models.BooleanField("last check succeeded", null=True, editable=False)
    last_check_at = models.DateTimeField("last checked", null=True, editable=False)
    last_check_ms = models.PositiveIntegerField("connect time (ms)", null=True, editable=False)
    last_check_reason = models.CharField(max_length=1000, blank=True, editable=False)
    last_check_tools = models.JSONField(default=list, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["toolbox", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["toolbox", "name"],
                name="server_name_unique_per_toolbox",
                violation_error_message="This toolbox already has a server of this name.",
            ),
            models.CheckConstraint(
                condition=Q(name__regex=NAME_PATTERN), name="server_name_charset"
            ),
            models.CheckConstraint(
                condition=Q(transport__in=Transport.values), name="server_transport_valid"
            ),
            models.CheckConstraint(
                condition=~Q(transport=Transport.STDIO)
                | ~Q(command="")
                | Q(catalog_entry__isnull=False),
                name="server_stdio_needs_command",
                violation_error_message="A stdio server needs a command.",
            ),
            models.CheckConstraint(
                condition=Q(transport=Transport.STDIO)
                | ~Q(url="")
                | Q(catalog_entry__isnull=False),
                name="server_remote_needs_url",
                violation_error_message="A remote server needs a URL.",
            ),
            models.CheckConstraint(condition=Q(timeout__gt=0), name="server_timeout_positive"),
            models.CheckConstraint(
                condition=Q(idle_timeout__isnull=True) | Q(idle_timeout__gt=0),
                name="server_idle_timeout_positive",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, Any] = {}
        if self.catalog_entry_id is not None:
            from toolboxes import catalog

            errors.update(catalog.server_errors(self))
        elif self.transport == Transport.STDIO:
            if not self.command.strip():
                errors["command"] = "A stdio server needs a command."
            if self.url:
                errors["url"] = "Only remote servers have a URL."
            if self.headers:
                errors["headers"] = "Only remote servers have headers."
        elif self.transport in REMOTE_TRANSPORTS:
            if not self.url.strip():
                errors["url"] = "A remote server needs a URL."
            else:
                try:
                    validate_remote_url(self.url)
                except ValidationError as exc:
                    errors["url"] = [f"URL {message}" for message in exc.messages]
            for field in ("command", "cwd"):
                if getattr(self, field):
                    errors[field] = "Only stdio servers have this field."
            if self.args:
                errors["args"] = "Only stdio servers have arguments."
            if self.env:
                errors["env"] = "Only stdio servers have environment variables."
            if self.mounts:
                errors["mounts"] = "Only stdio servers have mounts."
        if self.timeout is not None and self.timeout < 1:
            errors["timeout"] = "The timeout must be at least 1 second."
        if self.idle_timeout is not None and self.idle_timeout < 1:
            errors["idle_timeout"] = "The idle timeout must be at least 1 second."
        if errors:
            raise ValidationError(errors)


# Catalog names: an MCP Registry name ("io.github.user/weather") or a plain one.
validate_catalog_name = RegexValidator(
    r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$",
    "Use letters, digits, '-', '_', '.' and at most one '/'.",
    code="invalid_name",
)
validate_parameter_name = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_.-]*$",
    "Start with a letter or '_'; then letters, digits, '_', '.' or '-'.",
    code="invalid_name",
)


class CatalogEntry(SandboxSettings):
    """A server template the operator curates; tenant admins make servers only from these.

    `{{name}}` in args, env values, URL and header values is replaced by the value of the
    declared parameter `name` (see `toolboxes.catalog`); `${VAR}` keeps its meaning.
    """

    name = models.CharField(
        max_length=200,
        unique=True,
        validators=[validate_catalog_name],
        help_text="e.g. io.github.user/weather (an MCP Registry name) or time.",
    )
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    transport = models.CharField(max_length=20, choices=Transport, default=Transport.STDIO)
    command = models.CharField(max_length=1000, blank=True, help_text="stdio: the program.")
    args = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_args],
        help_text='stdio: list of strings; {{param}} is a parameter, e.g. ["--port={{port}}"].',
    )
    env = EncryptedStringMapField(
        default=dict,
        blank=True,
        validators=[validate_env],
        help_text="stdio: environment variables; values may use {{param}} (encrypted at rest).",
    )
    cwd = models.CharField("working directory", max_length=1000, blank=True)
    url = models.CharField(
        "URL", max_length=2000, blank=True, help_text="remote: http(s) URL; may use {{param}}."
    )
    headers = EncryptedStringMapField(
        default=dict,
        blank=True,
        validators=[validate_headers],
        help_text="remote: HTTP headers; values may use {{param}} (encrypted at rest).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "catalog entry"
        verbose_name_plural = "catalog entries"
        constraints = [
            models.CheckConstraint(
                condition=Q(transport__in=Transport.values), name="catalog_transport_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        # Servers made from it show its transport in lists and filters.
        self.servers.exclude(transport=self.transport).update(transport=self.transport)

    def clean(self) -> None:
        from toolboxes import catalog

        errors = catalog.entry_errors(self)
        if errors:
            raise ValidationError(errors)


class CatalogParameter(models.Model):
    """A value a tenant admin gives when making a server from an entry."""

    entry = models.ForeignKey(CatalogEntry, on_delete=models.CASCADE, related_name="parameters")
    name = models.CharField(
        max_length=100,
        validators=[validate_parameter_name],
        help_text="Used as {{name}} in the entry's args, env values, URL and header values.",
    )
    description = models.CharField(max_length=500, blank=True)
    required = models.BooleanField(default=False)
    default = models.CharField(max_length=2000, blank=True)
    choices = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_args],
        help_text='The only values allowed, e.g. ["info", "debug"]; empty: any.',
    )
    secret = models.BooleanField(
        default=False, help_text="Masked in the admin and encrypted at rest."
    )
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["entry", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["entry", "name"],
                name="catalog_parameter_unique_per_entry",
                violation_error_message="This entry already has a parameter of this name.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.choices and self.default and self.default not in self.choices:
            raise ValidationError({"default": "The default must be one of the choices."})


# Models of their own modules, registered with this app.
from toolboxes.installation import Installation  # noqa: E402, F401
from toolboxes.pins import PinState, ToolPin  # noqa: E402, F401
