"""`{{param}}` placeholders in a catalog entry's args, env values, URL and header values.

Double braces: `${VAR}` stays an environment reference. Plain text in, plain text out:
the entry's and its servers' rules (`toolboxes.models`) and what a server runs
(`toolboxes.launch`) use these.
"""

from __future__ import annotations

import re

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


def placeholders(text: str) -> list[str]:
    return PLACEHOLDER.findall(text)


def substitute(text: str, values: dict[str, str]) -> str:
    """One pass: a value that itself looks like `{{x}}` is not replaced again."""
    return PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), text)


def fill(text: str, values: dict[str, str]) -> str | None:
    """The text filled in, or None when it uses parameters and all of them are empty (an
    optional `--port={{port}}` left unset is left out, not passed as `--port=`)."""
    names = placeholders(text)
    if names and not any(values.get(name) for name in names):
        return None
    return substitute(text, values)


def sample_values(text: str) -> dict[str, str]:
    """A stand-in value for each placeholder, to check the shape of a templated URL."""
    return {name: "placeholder" for name in placeholders(text)}
