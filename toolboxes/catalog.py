"""Servers made from catalog entries: `{{param}}` placeholders, their values, and what such
a server runs.

An entry's args, env values, URL and header values may hold `{{name}}` placeholders of its
declared parameters (double braces: `${VAR}` stays an environment reference). A server made
from the entry keeps only its parameter values; what it runs is worked out from the entry
each time (`launch_of`), so an edit of the entry reaches every server made from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from mcp_gateway import sandbox_paths
from toolboxes.models import REMOTE_TRANSPORTS, CatalogEntry, Server, Transport
from toolboxes.validators import validate_remote_url

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")
SANDBOX_FIELDS = (
    "mounts",
    "network",
    "memory_limit_mb",
    "process_limit",
    "cpu_limit_seconds",
    "open_files_limit",
    "egress_allow",
)
# What a catalog-made server takes from its entry, and so must leave empty itself.
ENTRY_ONLY_FIELDS = ("command", "args", "env", "cwd", "url", "headers", "mounts", "egress_allow")
FROM_ENTRY = "A server made from a catalog entry takes this from the entry."


@dataclass(frozen=True, slots=True)
class Launch:
    """What a server runs and where: its own fields, or its entry's with values filled in."""

    transport: str
    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    url: str
    headers: dict[str, str]
    mounts: list[dict[str, Any]]
    network: bool
    memory_limit_mb: int | None
    process_limit: int | None
    cpu_limit_seconds: int | None
    open_files_limit: int | None
    egress_allow: list[str]


def placeholders(text: str) -> list[str]:
    return PLACEHOLDER.findall(text)


def substitute(text: str, values: dict[str, str]) -> str:
    """One pass: a value that itself looks like `{{x}}` is not replaced again."""
    return PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), text)


def _templated(entry: CatalogEntry) -> Iterator[tuple[str, str]]:
    """(field, text) of every string of the entry that may hold placeholders."""
    for index, arg in enumerate(entry.args or []):
        if isinstance(arg, str):
            yield f"args[{index}]", arg
    for name, value in (entry.env or {}).items():
        if isinstance(value, str):
            yield f"env.{name}", value
    yield "url", entry.url or ""
    for name, value in (entry.headers or {}).items():
        if isinstance(value, str):
            yield f"headers.{name}", value


def whole_argument_parameters(entry: CatalogEntry) -> set[str]:
    """Parameters that fill an argument on their own (`{{dir}}`): their values must not
    start with '-', or a value could smuggle in an option the operator did not choose."""
    return {
        names[0]
        for arg in entry.args or []
        if isinstance(arg, str)
        and len(names := placeholders(arg)) == 1
        and PLACEHOLDER.fullmatch(arg.strip())
    }


def undeclared(entry: CatalogEntry, declared: set[str]) -> list[str]:
    """`field: {{name}}` for each placeholder that names no declared parameter."""
    return [
        f"{field}: {{{{{name}}}}}"
        for field, text in _templated(entry)
        for name in placeholders(text)
        if name not in declared
    ]


def entry_errors(entry: CatalogEntry) -> dict[str, list[str]]:
    """The transport's rules, as for a server (placeholders checked against parameters by
    `undeclared`, where the parameters are known)."""
    errors: dict[str, list[str]] = {}
    if entry.transport == Transport.STDIO:
        if not entry.command.strip():
            errors["command"] = ["A stdio server needs a command."]
        if entry.url:
            errors["url"] = ["Only remote servers have a URL."]
        if entry.headers:
            errors["headers"] = ["Only remote servers have headers."]
    elif entry.transport in REMOTE_TRANSPORTS:
        if not entry.url.strip():
            errors["url"] = ["A remote server needs a URL."]
        else:
            try:
                validate_remote_url(substitute(entry.url, _dummy_values(entry.url)))
            except ValidationError as exc:
                errors["url"] = [f"URL {message}" for message in exc.messages]
        for field in ("command", "cwd", "args", "env", "mounts"):
            if getattr(entry, field):
                errors[field] = ["Only stdio servers have this field."]
    return errors


def _dummy_values(text: str) -> dict[str, str]:
    return {name: "placeholder" for name in placeholders(text)}


def values_of(server: Server) -> dict[str, str]:
    """Every declared parameter's value: the server's, else the default, else empty."""
    given = {**(server.parameters or {}), **(server.secret_parameters or {})}
    return {
        parameter.name: given.get(parameter.name) or parameter.default
        for parameter in server.catalog_entry.parameters.all()
    }


def split_values(entry: CatalogEntry, values: dict[str, str]) -> tuple[dict, dict]:
    """(plain, secret) maps of values: secret ones go to the encrypted field."""
    secret = {p.name for p in entry.parameters.all() if p.secret}
    plain = {name: value for name, value in values.items() if name not in secret}
    return plain, {name: value for name, value in values.items() if name in secret}


def server_errors(server: Server) -> dict[str, list[str]]:
    """Validation of a catalog-made server; also files secret values under the encrypted
    field and takes the entry's transport (for lists and filters)."""
    entry = server.catalog_entry
    errors: dict[str, list[str]] = {}
    for field in ENTRY_ONLY_FIELDS:
        if getattr(server, field):
            errors[field] = [FROM_ENTRY]
    server.transport = entry.transport
    given = {**(server.parameters or {}), **(server.secret_parameters or {})}
    server.parameters, server.secret_parameters = split_values(entry, given)
    declared = {parameter.name: parameter for parameter in entry.parameters.all()}
    problems = [f"Unknown parameter '{name}' of {entry}." for name in given if name not in declared]
    whole = whole_argument_parameters(entry)
    for name, parameter in declared.items():
        value = given.get(name, "")
        if not isinstance(value, str):
            problems.append(f"Parameter '{name}' must be a string.")
            continue
        effective = value or parameter.default
        if parameter.required and not effective:
            problems.append(f"Parameter '{name}' is required.")
        if value and parameter.choices and value not in parameter.choices:
            problems.append(f"Parameter '{name}' must be one of: {', '.join(parameter.choices)}.")
        if "${" in value:
            problems.append(f"Parameter '{name}' must not contain '${{'.")
        if name in whole and value.startswith("-"):
            problems.append(f"Parameter '{name}' must not start with '-'.")
    if not problems:
        problems = path_problems(server, values_of(server))
    if problems:
        errors["parameters"] = problems
    return errors


def path_problems(server: Server, values: dict[str, str]) -> list[str]:
    """An argument the tenant's values fill that names a host path its servers may not be
    shown: outside the tenant's directories, a symlink, protected, below a directory other
    users cannot enter (mcp_gateway.sandbox_paths; each spawn checks it again)."""
    from django.conf import settings

    if server.toolbox_id is None:
        return []
    roots = sandbox_paths.tenant_roots(server.toolbox.tenant.slug)
    protected = settings.WORKBENCH_SANDBOX_PROTECTED_PATHS
    problems = []
    for arg in server.catalog_entry.args or []:
        names = list(dict.fromkeys(placeholders(arg)))
        filled = _unless_empty(arg, values) if names else None
        if filled is None or not filled.startswith("/"):
            continue
        if reason := sandbox_paths.problem(filled, roots, protected):
            named = ", ".join(f"'{name}'" for name in names)
            problems.append(f"Parameter {named}: {reason}.")
    return problems


def _unless_empty(text: str, values: dict[str, str]) -> str | None:
    """The text filled in, or None when it uses parameters and all of them are empty (an
    optional `--port={{port}}` left unset is left out, not passed as `--port=`)."""
    names = placeholders(text)
    if names and not any(values.get(name) for name in names):
        return None
    return substitute(text, values)


def launch_of(server: Server) -> Launch:
    entry = server.catalog_entry if server.catalog_entry_id is not None else None
    if entry is None:
        return Launch(
            server.transport,
            server.command,
            list(server.args),
            dict(server.env),
            server.cwd,
            server.url,
            dict(server.headers),
            *(getattr(server, field) for field in SANDBOX_FIELDS),
        )
    values = values_of(server)
    args = [filled for arg in entry.args if (filled := _unless_empty(arg, values)) is not None]

    def fill_map(items: dict[str, str]) -> dict[str, str]:
        return {
            name: filled
            for name, value in items.items()
            if (filled := _unless_empty(value, values)) is not None
        }

    return Launch(
        entry.transport,
        entry.command,
        args,
        fill_map(entry.env),
        entry.cwd,
        substitute(entry.url, values),
        fill_map(entry.headers),
        *(getattr(entry, field) for field in SANDBOX_FIELDS),
    )
