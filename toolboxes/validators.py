"""Validation rules for configuration values, shared by the models and the importer.

Each validator raises `ValidationError` with a message that reads well after the field
name ("args: item 2 must be a string").
"""

import re
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator

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
