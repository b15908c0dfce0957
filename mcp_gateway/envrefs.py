"""`${VAR}` and `${VAR:-default}` references in server configuration (spec: "environment
references"), expanded from the gateway's environment when a server is connected."""

import re
from collections.abc import Mapping

_REFERENCE = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}")
# Closed `${...}` that is not a reference (lowercase or other names) stays literal.
_LITERAL = re.compile(r"\$\{[^}]*\}")


class ExpansionError(ValueError):
    """A reference that cannot be expanded; the message names the variable and field."""


def expand(value: str, field: str, environ: Mapping[str, str]) -> str:
    """Expand references in one string; other names stay literal, defaults are not
    expanded again, an unclosed `${` is an error."""

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ExpansionError(f"environment variable '{name}' is not set (in {field})")

    rest = _LITERAL.sub("", _REFERENCE.sub("", value))
    if "${" in rest:
        raise ExpansionError(f"unclosed '${{' in {field}")
    return _REFERENCE.sub(replace, value)
