"""What an import changes: the difference between a tenant's configuration (the export
format) before and after, named by toolbox (`dev`) and server (`dev/fs`). One home for the
API's `PUT .../config` (its answer and its history) and `import_config` (what it prints,
and all it does with `--dry-run`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolboxes.config_file.schema import OFFERED_ALONE
from toolboxes.models import Server, Toolbox

# The plan's name for the tenant's tool policies (no toolbox can be named so: a space).
POLICIES = "tool policies"
# A toolbox's own fields in the document, as a plan names them.
TOOLBOX_FIELDS = ("description", OFFERED_ALONE)


@dataclass
class Plan:
    created: list[str] = field(default_factory=list)
    changed: dict[str, list[str]] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    # What was deleted, as read before (its pk and repr, for the admin's history).
    gone: dict[str, Toolbox | Server] = field(default_factory=dict, repr=False)

    @property
    def empty(self) -> bool:
        return not (self.created or self.changed or self.deleted)

    def summary(self) -> str:
        """One line: `created a, b; changed c (fields); deleted d` (parts with no names
        left out; "" when empty)."""
        changed = [f"{name} ({', '.join(fields)})" for name, fields in self.changed.items()]
        parts = (("created", self.created), ("changed", changed), ("deleted", self.deleted))
        return "; ".join(f"{what} {', '.join(names)}" for what, names in parts if names)


def _servers(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        f"{toolbox_name}/{server_name}": server
        for toolbox_name, toolbox in document["toolboxes"].items()
        for server_name, server in toolbox["mcpServers"].items()
    }


def _moved(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """The servers whose place among their toolbox's other servers changed: each one's
    rank among the servers there both before and after. A server whose index moved only
    because a sibling was deleted (or one was added before it) kept its place."""
    moved: set[str] = set()
    for toolbox_name, toolbox in after["toolboxes"].items():
        old = before["toolboxes"].get(toolbox_name, {"mcpServers": {}})["mcpServers"]
        new = toolbox["mcpServers"]
        old_order = [name for name in old if name in new]
        new_order = [name for name in new if name in old]
        moved |= {
            f"{toolbox_name}/{name}"
            for old_name, name in zip(old_order, new_order, strict=True)
            if old_name != name
        }
    return moved


def plan_of(before: dict[str, Any], after: dict[str, Any]) -> Plan:
    """What changed between two documents: toolboxes and servers created and deleted, and
    each changed one with the names of its fields that changed (never their values;
    `position` when it moved among its siblings)."""
    plan = Plan()
    old_boxes, new_boxes = before["toolboxes"], after["toolboxes"]
    plan.created += [name for name in new_boxes if name not in old_boxes]
    plan.deleted += [name for name in old_boxes if name not in new_boxes]
    for name in new_boxes:
        if name in old_boxes:
            was, now = old_boxes[name], new_boxes[name]
            fields = [key for key in TOOLBOX_FIELDS if was.get(key) != now.get(key)]
            if fields:
                plan.changed[name] = fields
    old, new = _servers(before), _servers(after)
    moved = _moved(before, after)
    plan.created += [name for name in new if name not in old]
    plan.deleted += [name for name in old if name not in new]
    for name, server in new.items():
        if name not in old:
            continue
        was = old[name]
        fields = sorted(key for key in {*server, *was} if server.get(key) != was.get(key))
        if name in moved:
            fields.append("position")
        if fields:
            plan.changed[name] = fields
    unset = {
        "denyDestructiveToKeys": False,
        "askDestructive": False,
        "guardSecrets": False,
        "rules": [],
    }
    old_policies = {**unset, **(before.get("policies") or {})}
    new_policies = {**unset, **(after.get("policies") or {})}
    fields = sorted(key for key in new_policies if new_policies[key] != old_policies.get(key))
    if fields:
        plan.changed[POLICIES] = fields
    return plan
