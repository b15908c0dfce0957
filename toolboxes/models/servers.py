"""A toolbox's downstream servers."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from kernel import pins as pin_rule
from kernel.tenant_paths import problem as path_problem
from kernel.tenant_paths import tenant_roots
from toolboxes.fields import EncryptedStringMapField
from toolboxes.models.sandbox import SandboxSettings
from toolboxes.models.sign_in import AuthMode, SignInSettings
from toolboxes.models.tenants import Toolbox
from toolboxes.placeholders import fill, placeholders
from toolboxes.server_fields import ENTRY_ONLY_FIELDS
from toolboxes.validators import (
    NAME_PATTERN,
    validate_args,
    validate_env,
    validate_headers,
    validate_name,
    validate_remote_url,
    validate_tool_filters,
)

FROM_ENTRY = "A server made from a catalog entry takes this from the entry."


class Transport(models.TextChoices):
    STDIO = "stdio", "stdio (local command)"
    STREAMABLE_HTTP = "streamable-http", "Streamable HTTP"
    SSE = "sse", "SSE (legacy)"


REMOTE_TRANSPORTS = (Transport.STREAMABLE_HTTP, Transport.SSE)


class PinningPolicy(models.TextChoices):
    """How a server's tool definitions are pinned (the rules: kernel.pins)."""

    TRUST_FIRST = pin_rule.TRUST_FIRST, "trust first: approve the first offer, hold later changes"
    APPROVE_ALL = pin_rule.APPROVE_ALL, "approve all: hold every tool until an admin approves it"
    OFF = pin_rule.OFF, "off: no pinning"


def default_tool_filters() -> list[str]:
    return ["*"]


class Server(SandboxSettings, SignInSettings):
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
    # and sandbox (`toolboxes.launch`); these hold the tenant's parameter values.
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
    # (`toolboxes.server_status`); written with update(), so no configuration version moves.
    last_check_ok = models.BooleanField("last check succeeded", null=True, editable=False)
    last_check_at = models.DateTimeField("last checked", null=True, editable=False)
    last_check_ms = models.PositiveIntegerField("connect time (ms)", null=True, editable=False)
    last_check_reason = models.CharField(max_length=1000, blank=True, editable=False)
    # A failure's incident (the gateway's log line) and what the admin is told of it beyond
    # the client's phrase: what happened and what to change (`mcp_gateway`'s causes).
    last_check_incident = models.CharField("incident id", max_length=40, blank=True, editable=False)
    last_check_cause = models.TextField("cause", blank=True, editable=False)
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
            errors.update(self._catalog_errors())
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
        errors.update(self.sign_in_errors())
        if self.catalog_entry_id is not None and (
            self.auth != AuthMode.NONE or self.oauth_client or self.oauth_scopes
        ):
            errors["auth"] = FROM_ENTRY
        if self.timeout is not None and self.timeout < 1:
            errors["timeout"] = "The timeout must be at least 1 second."
        if self.idle_timeout is not None and self.idle_timeout < 1:
            errors["idle_timeout"] = "The idle timeout must be at least 1 second."
        if errors:
            raise ValidationError(errors)

    # --- made from a catalog entry -------------------------------------------------

    def catalog_values(self) -> dict[str, str]:
        """Every declared parameter's value: the server's, else the default, else empty."""
        given = {**(self.parameters or {}), **(self.secret_parameters or {})}
        return {
            parameter.name: given.get(parameter.name) or parameter.default
            for parameter in self.catalog_entry.parameters.all()
        }

    def _catalog_errors(self) -> dict[str, list[str]]:
        """Validation of a catalog-made server; also files secret values under the encrypted
        field and takes the entry's transport (for lists and filters)."""
        entry = self.catalog_entry
        errors: dict[str, list[str]] = {}
        for field in ENTRY_ONLY_FIELDS:
            if getattr(self, field):
                errors[field] = [FROM_ENTRY]
        self.transport = entry.transport
        given = {**(self.parameters or {}), **(self.secret_parameters or {})}
        self.parameters, self.secret_parameters = entry.split_values(given)
        declared = {parameter.name: parameter for parameter in entry.parameters.all()}
        problems = [
            f"Unknown parameter '{name}' of {entry}." for name in given if name not in declared
        ]
        whole = entry.whole_argument_parameters()
        for name, parameter in declared.items():
            value = given.get(name, "")
            if not isinstance(value, str):
                problems.append(f"Parameter '{name}' must be a string.")
                continue
            effective = value or parameter.default
            if parameter.required and not effective:
                problems.append(f"Parameter '{name}' is required.")
            if value and parameter.choices and value not in parameter.choices:
                problems.append(
                    f"Parameter '{name}' must be one of: {', '.join(parameter.choices)}."
                )
            if "${" in value:
                problems.append(f"Parameter '{name}' must not contain '${{'.")
            if name in whole and value.startswith("-"):
                problems.append(f"Parameter '{name}' must not start with '-'.")
        if not problems:
            problems = self._path_problems(self.catalog_values())
        if problems:
            errors["parameters"] = problems
        return errors

    def _path_problems(self, values: dict[str, str]) -> list[str]:
        """An argument the tenant's values fill that names a host path its servers may not be
        shown: outside the tenant's directories, a symlink, protected, below a directory other
        users cannot enter (mcp_gateway's sandbox paths; each spawn checks it again)."""
        if self.toolbox_id is None:
            return []
        roots = tenant_roots(self.toolbox.tenant.slug)
        protected = settings.WORKBENCH_SANDBOX_PROTECTED_PATHS
        problems = []
        for arg in self.catalog_entry.args or []:
            names = list(dict.fromkeys(placeholders(arg)))
            filled = fill(arg, values) if names else None
            if filled is None or not filled.startswith("/"):
                continue
            if reason := path_problem(filled, roots, protected):
                named = ", ".join(f"'{name}'" for name in names)
                problems.append(f"Parameter {named}: {reason}.")
        return problems
