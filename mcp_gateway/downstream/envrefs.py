"""`${VAR}` and `${VAR:-default}` references in server configuration (spec: "environment
references"), expanded when a server is connected.

Only names the operator allows may be referenced (`WORKBENCH_ENV_REFERENCES`: names and
`PREFIX_*` patterns), and never the gateway's own settings, whatever a pattern says: an
admin who may type `${SECRET_KEY}` into a header would otherwise ship the key to any URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

_REFERENCE = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}")
# Closed `${...}` that is not a reference (lowercase or other names) stays literal.
_LITERAL = re.compile(r"\$\{[^}]*\}")
# `NAME=value` or `export NAME=value` lines of an env file (django-environ's syntax).
_ENV_FILE_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")

# The gateway's own secrets and stores: never expandable, whatever the operator allows.
PROTECTED_NAMES = frozenset(
    {"SECRET_KEY", "ENCRYPTION_KEYS", "DATABASE_URL", "CACHE_URL", "TEST_DATABASE_URL"}
)


class ExpansionError(ValueError):
    """A reference that cannot be expanded; the message names the variable and field
    (never a value)."""


def env_file_names(path: str | Path) -> frozenset[str]:
    """The names an env file sets (all of them protected: the file holds the gateway's
    own configuration)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    return frozenset(m.group(1) for line in text.splitlines() if (m := _ENV_FILE_LINE.match(line)))


class ReferencePolicy:
    """Which names `${...}` may read: allowed by name or `PREFIX_*`, and not protected."""

    def __init__(self, allowed: Iterable[str], protected: Iterable[str] = ()) -> None:
        items = [item.strip() for item in allowed if item.strip()]
        self._names = frozenset(item for item in items if not item.endswith("*"))
        self._prefixes = tuple(item[:-1] for item in items if item.endswith("*"))
        self._protected = PROTECTED_NAMES | frozenset(protected)

    def allows(self, name: str) -> bool:
        if name in self._protected:
            return False
        return name in self._names or name.startswith(self._prefixes)


class ReferenceEnviron(Mapping[str, str]):
    """The process environment as references see it: the whole mapping stays readable for
    the gateway's own use (a stdio server's base PATH), but `${...}` goes through the
    policy."""

    def __init__(self, environ: Mapping[str, str], policy: ReferencePolicy) -> None:
        self._environ = environ
        self.policy = policy

    def __getitem__(self, name: str) -> str:
        return self._environ[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


def expand(value: str, field: str, environ: Mapping[str, str]) -> str:
    """Expand references in one string; other names stay literal, defaults are not
    expanded again, an unclosed `${` is an error. With a `ReferenceEnviron`, a name its
    policy refuses is an error even when it has a default."""
    policy = environ.policy if isinstance(environ, ReferenceEnviron) else None

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if policy is not None and not policy.allows(name):
            raise ExpansionError(f"environment variable '{name}' is not allowed (in {field})")
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ExpansionError(f"environment variable '{name}' is not set (in {field})")

    rest = _LITERAL.sub("", _REFERENCE.sub("", value))
    if "${" in rest:
        raise ExpansionError(f"unclosed '${{' in {field}")
    return _REFERENCE.sub(replace, value)


def referenced_values(values: Iterable[str], environ: Mapping[str, str]) -> set[str]:
    """The values that references in `values` would expand to (for redaction)."""
    policy = environ.policy if isinstance(environ, ReferenceEnviron) else None
    found: set[str] = set()
    for value in values:
        for match in _REFERENCE.finditer(value):
            name = match.group(1)
            if (policy is None or policy.allows(name)) and environ.get(name):
                found.add(environ[name])
    return found
