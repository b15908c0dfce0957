"""A server's check as the admin shows it: the gateway's answer to "connect this server as
you would" (`mcp_gateway.for_admins`), kept by the admin (`toolboxes.gateway_questions`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class CheckResult:
    ok: bool
    milliseconds: int
    tools: list[dict[str, Any]] = field(default_factory=list)  # definitions (kernel.pins)
    reason: str = ""  # the classified phrase a client would read
    incident: str | None = None
    stderr_tail: tuple[str, ...] = ()  # redacted; for admins only
    cause: str = ""  # what happened and what to change (`downstream.causes`); admins only
    # An ok server's lists that failed (its resources, templates or prompts, which the
    # toolbox endpoint serves): one line each, for admins.
    notes: tuple[str, ...] = ()
