"""The catalog: server templates the operator curates, and their parameters."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from toolboxes.fields import EncryptedStringMapField
from toolboxes.models.sandbox import SandboxSettings
from toolboxes.models.servers import REMOTE_TRANSPORTS, Transport
from toolboxes.models.sign_in import SignInSettings
from toolboxes.placeholders import PLACEHOLDER, placeholders, sample_values, substitute
from toolboxes.validators import (
    validate_args,
    validate_env,
    validate_headers,
    validate_remote_url,
)

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


class CatalogEntry(SandboxSettings, SignInSettings):
    """A server template the operator curates; tenant admins make servers only from these.

    `{{name}}` in args, env values, URL and header values is replaced by the value of the
    declared parameter `name` (`toolboxes.placeholders`); `${VAR}` keeps its meaning. A
    server made from the entry keeps only its parameter values; what it runs is worked out
    from the entry each time (`toolboxes.launch`), so an edit reaches every such server.
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
        """The transport's rules, as for a server (placeholders are checked against the
        parameters by `undeclared`, where the parameters are known)."""
        errors: dict[str, list[str]] = {}
        if self.transport == Transport.STDIO:
            if not self.command.strip():
                errors["command"] = ["A stdio server needs a command."]
            if self.url:
                errors["url"] = ["Only remote servers have a URL."]
            if self.headers:
                errors["headers"] = ["Only remote servers have headers."]
        elif self.transport in REMOTE_TRANSPORTS:
            if not self.url.strip():
                errors["url"] = ["A remote server needs a URL."]
            else:
                try:
                    validate_remote_url(substitute(self.url, sample_values(self.url)))
                except ValidationError as exc:
                    errors["url"] = [f"URL {message}" for message in exc.messages]
            for field in ("command", "cwd", "args", "env", "mounts"):
                if getattr(self, field):
                    errors[field] = ["Only stdio servers have this field."]
        for field, message in self.sign_in_errors().items():
            errors.setdefault(field, []).append(message)
        if errors:
            raise ValidationError(errors)

    def _templated(self) -> Iterator[tuple[str, str]]:
        """(field, text) of every string of the entry that may hold placeholders."""
        for index, arg in enumerate(self.args or []):
            if isinstance(arg, str):
                yield f"args[{index}]", arg
        for name, value in (self.env or {}).items():
            if isinstance(value, str):
                yield f"env.{name}", value
        yield "url", self.url or ""
        for name, value in (self.headers or {}).items():
            if isinstance(value, str):
                yield f"headers.{name}", value

    def undeclared(self, declared: set[str]) -> list[str]:
        """`field: {{name}}` for each placeholder that names no declared parameter."""
        return [
            f"{field}: {{{{{name}}}}}"
            for field, text in self._templated()
            for name in placeholders(text)
            if name not in declared
        ]

    def exposed_secrets(self) -> list[str]:
        """Secret parameters that fill an argument or the URL: a process's arguments are
        seen by the host's users (`ps`), a URL's query by the remote server's logs."""
        secret = {parameter.name for parameter in self.parameters.all() if parameter.secret}
        used = {name for text in [*self.args, self.url] for name in placeholders(text)}
        return sorted(secret & used)

    def whole_argument_parameters(self) -> set[str]:
        """Parameters that fill an argument on their own (`{{dir}}`): their values must not
        start with '-', or a value could smuggle in an option the operator did not choose."""
        return {
            names[0]
            for arg in self.args or []
            if isinstance(arg, str)
            and len(names := placeholders(arg)) == 1
            and PLACEHOLDER.fullmatch(arg.strip())
        }

    def split_values(self, values: dict[str, str]) -> tuple[dict, dict]:
        """(plain, secret) maps of values: secret ones go to the encrypted field."""
        secret = {p.name for p in self.parameters.all() if p.secret}
        plain = {name: value for name, value in values.items() if name not in secret}
        return plain, {name: value for name, value in values.items() if name in secret}


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
