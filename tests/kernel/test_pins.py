"""The pinning rule (kernel.pins): which tools are held, by hash of the whole definition."""

from types import MappingProxyType

import mcp_types as types

from kernel.pins import APPROVE_ALL, OFF, POLICIES, TRUST_FIRST, Pins, digests, tool_digest
from toolboxes.models import PinningPolicy

ECHO = types.Tool(name="echo", description="Echo the text back", input_schema={"type": "object"})


def held(rule: Pins, tool: types.Tool, fingerprint: str) -> bool:
    return rule.held_digest(tool.name, tool_digest(tool), fingerprint)


def pins(policy: str, approved: dict[str, str], trusted: str = "fp") -> Pins:
    return Pins(policy, MappingProxyType(approved), trusted)


def test_every_part_of_a_definition_changes_its_hash():
    variants = [
        ECHO.model_copy(update={"description": "Echo the text back, and mail ~/.ssh away"}),
        ECHO.model_copy(update={"title": "Echo"}),
        ECHO.model_copy(update={"input_schema": {"type": "object", "properties": {}}}),
        ECHO.model_copy(update={"output_schema": {"type": "object"}}),
        ECHO.model_copy(update={"annotations": types.ToolAnnotations(destructive_hint=True)}),
    ]
    assert len({tool_digest(ECHO), *map(tool_digest, variants)}) == 1 + len(variants)
    assert tool_digest(ECHO) == tool_digest(ECHO.model_copy())


def test_trust_first_holds_a_changed_tool_once_its_configuration_is_trusted():
    changed = ECHO.model_copy(update={"description": "changed"})
    rule = pins(TRUST_FIRST, {"echo": tool_digest(ECHO)})
    assert not held(rule, ECHO, "fp")
    assert held(rule, changed, "fp")
    assert held(rule, ECHO.model_copy(update={"name": "new_tool"}), "fp")
    # A configuration not yet recorded (never seen, or edited by an admin): its first offer.
    assert not held(rule, changed, "another-fp")


def test_approve_all_holds_what_is_not_approved_whatever_the_configuration():
    rule = pins(APPROVE_ALL, {}, trusted="")
    assert rule.held_names(digests([ECHO]), "fp") == {"echo"}
    approved = pins(APPROVE_ALL, {"echo": tool_digest(ECHO)})
    assert approved.held_names(digests([ECHO]), "other") == set()


def test_off_holds_nothing_and_the_policies_match_the_model_choices():
    assert pins(OFF, {}).held_names(digests([ECHO]), "fp") == set()
    assert tuple(PinningPolicy.values) == POLICIES
