"""Pinned tool definitions: what each server offers, what an admin approved.

One `ToolPin` per tool a server has offered: the approved definition and its hash, and the
definition offered last (held while the two hashes differ). `PinState` remembers which
configuration of the server was trusted first (policy trust-first), so an admin's own edit
of a server (a new command, say) is trusted again once, while a server that changes its
tools by itself is held. Recorded and decided by `toolboxes.pins`; the rule is `kernel.pins`.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from django.db import models
from django.utils import timezone

from toolboxes.models.servers import Server


class ToolPin(models.Model):
    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="tool_pins")
    name = models.CharField(max_length=200)
    approved_hash = models.CharField(max_length=64, blank=True)
    approved_definition = models.JSONField(null=True, blank=True)
    offered_hash = models.CharField(max_length=64)
    offered_definition = models.JSONField()
    rejected_hash = models.CharField(
        max_length=64, blank=True, help_text="The offered definition an admin rejected."
    )
    first_seen_at = models.DateTimeField(auto_now_add=True)
    offered_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["server", "name"]
        verbose_name = "tool definition"
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="tool_pin_unique_per_server")
        ]

    def __str__(self) -> str:
        return f"{self.server.toolbox}/{self.server.name}: {self.name}"

    @property
    def status(self) -> str:
        if self.offered_hash == self.approved_hash:
            return "approved"
        if self.offered_hash == self.rejected_hash:
            return "rejected"
        return "held: changed" if self.approved_hash else "held: new"

    @property
    def is_held(self) -> bool:
        return self.offered_hash != self.approved_hash

    def diff(self) -> str:
        """A unified diff of the approved definition against the offered one."""
        return "\n".join(
            difflib.unified_diff(
                _lines(self.approved_definition),
                _lines(self.offered_definition),
                "approved",
                "offered",
                lineterm="",
            )
        )


class PinState(models.Model):
    server = models.OneToOneField(Server, on_delete=models.CASCADE, related_name="pin_state")
    trusted_fingerprint = models.CharField(max_length=64, blank=True)
    trusted_at = models.DateTimeField(null=True, blank=True)


def _lines(definition: Any) -> list[str]:
    if definition is None:
        return []
    return json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
