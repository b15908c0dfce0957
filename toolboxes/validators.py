"""Validation rules for configuration values, shared by the models and the importer.

Each validator raises `ValidationError` with a message that reads well after the field
name ("args: item 2 must be a string").
"""

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator

from kernel.headers import UNCONFIGURABLE_HEADERS
from kernel.tenant_paths import problem as path_problem

NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"
# Names of environment variables and HTTP headers.
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 token

validate_name = RegexValidator(
    NAME_PATTERN, "Use only letters, digits, '-', '_' and '.'.", code="invalid_name"
)


def validate_string_list(value: Any, *, allow_empty_items: bool = True) -> None:
    if not isinstance(value, list):
        raise ValidationError("must be a list of strings", code="not_a_list")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ValidationError(f"item {index} must be a string", code="not_a_string")
        if not allow_empty_items and not item.strip():
            raise ValidationError(f"item {index} must not be empty", code="empty_item")


def validate_args(value: Any) -> None:
    validate_string_list(value)


def validate_tool_filters(value: Any) -> None:
    validate_string_list(value, allow_empty_items=False)


def _validate_string_map(value: Any, name_re: re.Pattern[str], what: str) -> None:
    if not isinstance(value, dict):
        raise ValidationError(f"must be an object of {what} names to strings", code="not_a_map")
    for key, item in value.items():
        if not name_re.match(key):
            raise ValidationError(f"'{key}' is not a valid {what} name", code="invalid_key")
        if not isinstance(item, str):
            raise ValidationError(f"value of '{key}' must be a string", code="not_a_string")


def validate_env(value: Any) -> None:
    _validate_string_map(value, ENV_NAME_RE, "environment variable")


def validate_headers(value: Any) -> None:
    _validate_string_map(value, HEADER_NAME_RE, "header")
    for name in value:
        if name.lower() in UNCONFIGURABLE_HEADERS:
            raise ValidationError(
                f"'{name}' cannot be configured: the gateway sets it for each request",
                code="reserved_header",
            )


def validate_remote_url(value: str) -> None:
    """http(s) URL with a host; `${VAR}` references are allowed anywhere."""
    if "${" in value:
        if not re.match(r"^(https?://|\$\{)", value):
            raise ValidationError("must start with http:// or https://", code="bad_scheme")
        return
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https"):
        raise ValidationError("must start with http:// or https://", code="bad_scheme")
    if not parts.netloc:
        raise ValidationError("must name a host", code="no_host")


def validate_mounts(value: Any) -> None:
    """Sandbox mounts: `[{"path": "/abs", "writable": false}]`: never a gateway directory,
    nor one that resolves elsewhere or lies below one other users cannot enter."""
    if not isinstance(value, list):
        raise ValidationError("must be a list of mounts", code="not_a_list")
    seen: set[str] = set()
    for index, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise ValidationError(
                f'item {index} must be an object with a "path" string', code="bad_mount"
            )
        extra = set(item) - {"path", "writable"}
        if extra:
            raise ValidationError(
                f"item {index}: unknown field '{sorted(extra)[0]}'", code="bad_mount"
            )
        if not isinstance(item.get("writable", False), bool):
            raise ValidationError(f"item {index}: writable must be true or false", code="bad_mount")
        path = item["path"]
        if not path.startswith("/"):
            raise ValidationError(f"item {index}: the path must be absolute", code="relative")
        if ".." in path.split("/"):
            raise ValidationError(f"item {index}: the path must not contain '..'", code="dotdot")
        if path in seen:
            raise ValidationError(f"item {index}: {path} is mounted twice", code="duplicate")
        seen.add(path)
        normal = path.rstrip("/") or "/"
        for own in getattr(settings, "WORKBENCH_SANDBOX_PROTECTED_PATHS", []):
            if _path_within(normal, own) or _path_within(own, normal):
                raise ValidationError(
                    f"item {index}: {path} would show the gateway's own files ({own})",
                    code="protected",
                )
        # Resolved as each spawn will (the gateway's `path_problem`): a symlink, a protected
        # target, a directory above that the tenant's uid cannot enter.
        reason = path_problem(path, None, settings.WORKBENCH_SANDBOX_PROTECTED_PATHS)
        if reason:
            raise ValidationError(f"item {index}: {reason}", code="refused")


def _path_within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def validate_egress_allow(value: Any) -> None:
    """A server's network allowance (operators only): networks in CIDR form and host
    names, read as WORKBENCH_SANDBOX_EGRESS_ALLOW's items are (the gateway's sandbox
    network). A network that holds the host's loopback opens none of its ports
    (`validate_host_ports`)."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError("must be a list of networks or host names", code="not_a_list")
    for index, item in enumerate(value):
        try:
            ipaddress.ip_network(item.strip(), strict=False)
        except ValueError:
            if not _ALLOWED_HOST.fullmatch(item.strip()):
                raise ValidationError(
                    f"item {index}: '{item}' is neither a network (CIDR) nor a host name",
                    code="bad_allowance",
                ) from None


_ALLOWED_HOST = re.compile(r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?)+")


# The host's loopback as a server's host ports name it (inside the sandbox: 10.0.2.2).
HOST_LOOPBACK = "127.0.0.1"
_HOST_PORT = re.compile(r"([^:\s]+):([0-9]{1,5})")
HOST_PORTS_FORM = 'must be a list of "127.0.0.1:PORT" items'


def validate_host_ports(value: Any) -> None:
    """A server's host ports (operators only): TCP ports on the host's loopback that this
    server may reach (inside its sandbox as 10.0.2.2:PORT), each `127.0.0.1:PORT`. No
    network allowance opens the host's loopback; only these do, one port at a time, and
    never the gateway's own database or shared store."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError(HOST_PORTS_FORM, code="not_a_list")
    own = gateway_ports(settings.DATABASES["default"], settings.CACHES["default"])
    seen: set[int] = set()
    for index, item in enumerate(value):
        found = _HOST_PORT.fullmatch(item)
        if found is None:
            raise ValidationError(
                f"item {index}: '{item}' is not 127.0.0.1:PORT", code="bad_host_port"
            )
        host, port = found.group(1), int(found.group(2))
        if host != HOST_LOOPBACK:
            raise ValidationError(
                f"item {index}: '{item}': only the host's loopback (127.0.0.1) is named here; "
                "other hosts go in the network allowance",
                code="not_loopback",
            )
        if not 1 <= port <= 65535:
            raise ValidationError(
                f"item {index}: '{item}': the port must be between 1 and 65535", code="bad_port"
            )
        if port in seen:
            raise ValidationError(f"item {index}: '{item}' is named twice", code="duplicate")
        seen.add(port)
        if port in own:
            raise ValidationError(
                f"item {index}: '{item}' is {own[port]}: no server may reach it",
                code="gateway_port",
            )


def host_port_numbers(value: list[str]) -> tuple[int, ...]:
    """The port numbers of validated host ports."""
    return tuple(int(item.rsplit(":", 1)[1]) for item in value)


def gateway_ports(database: dict[str, Any], cache: dict[str, Any]) -> dict[int, str]:
    """The host loopback ports of the gateway's own database and shared store (Django's
    DATABASES["default"] and CACHES["default"]), and what each is."""
    loopback = {"", "localhost", "127.0.0.1", "::1"}
    ports: dict[int, str] = {}
    if "postgresql" in database["ENGINE"] and str(database.get("HOST") or "") in loopback:
        ports[int(database.get("PORT") or 5432)] = "the gateway's database"
    location = cache.get("LOCATION") or ""
    for url in [location] if isinstance(location, str) else location:
        parts = urlsplit(url)
        if parts.scheme.startswith("redis") and (parts.hostname or "") in loopback:
            ports[parts.port or 6379] = "the gateway's shared store"
    return ports
