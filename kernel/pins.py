"""The pin rule: which of a server's tools an admin has approved, by hash.

A tool's definition is hashed whole (canonical JSON of name, title, description, input and
output schema, annotations), so any change to what a model reads about a tool (a "rug
pull": a description that turns hostile after an admin looked) holds the tool until an admin
approves the new text. Free of Django and of every app: the gateway fills `Pins` from its
snapshot, the admin (`toolboxes.pins`) stores definitions and digests made here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the admin imports this module: no SDK load for a manage.py command
    import mcp_types as types

TRUST_FIRST = "trust-first"
APPROVE_ALL = "approve-all"
OFF = "off"
POLICIES = (TRUST_FIRST, APPROVE_ALL, OFF)
DEFAULT_POLICY = TRUST_FIRST


def definition(tool: types.Tool) -> dict[str, Any]:
    """The parts of a tool that a client (and its model) sees, as plain JSON."""
    annotations = (
        tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    )
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": annotations,
    }


def digest(definition: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces) of a definition."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def tool_digest(tool: types.Tool) -> str:
    return digest(definition(tool))


def digests(tools: Iterable[types.Tool]) -> dict[str, str]:
    """Each tool's digest by its name: made once per offer (a connection keeps them)."""
    return {tool.name: tool_digest(tool) for tool in tools}


@dataclass(frozen=True, slots=True)
class Pins:
    """One server's pinning, as the gateway's snapshot holds it.

    `trusted_fingerprint`: the configuration whose first offer was trusted (trust-first);
    a server never recorded with its current configuration trusts what it offers now.
    """

    policy: str = OFF
    approved: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    trusted_fingerprint: str = ""

    def checks(self, fingerprint: str) -> bool:
        """Whether what a server of this configuration offers waits for approvals at all."""
        if self.policy == OFF:
            return False
        # Trust-first: the first offer of a configuration is recorded as approved.
        return self.policy != TRUST_FIRST or self.trusted_fingerprint == fingerprint

    def held_digest(self, name: str, digest: str, fingerprint: str) -> bool:
        """Whether one tool (its name and digest) waits for an admin."""
        return self.checks(fingerprint) and self.approved.get(name) != digest

    def held_names(self, offered: Mapping[str, str], fingerprint: str) -> set[str]:
        """Which of the offered tools (name: digest) wait for an admin."""
        return {
            name for name, digest in offered.items() if self.held_digest(name, digest, fingerprint)
        }
