"""The "ask" effect of `kernel.tool_policy` (issue 36): a matrix of role by rule level by
where the call goes, each with its exact explanation and terms; ties (deny over ask over
allow); an admin's rule for the tool over the annotation default; "ask before every
destructive tool" beside "deny destructive tools to tenant keys"."""

from __future__ import annotations

import pytest

from kernel.approvals import DEFAULT_TERMS, ApprovalTerms
from kernel.roles import ADMIN, VIEWER
from kernel.tool_policy import (
    ALLOW,
    ASK,
    ASK_DESTRUCTIVE,
    DENY,
    DESTRUCTIVE_TO_KEYS,
    KEY,
    NO_RULE,
    ROLE,
    Defaults,
    Policy,
    Rule,
    Subject,
    decide,
)

VIEWER_ANNA = Subject(key_id=10, person=1, role=VIEWER)
ADMIN_BEN = Subject(key_id=11, person=2, role=ADMIN)
TENANT_KEY = Subject(key_id=12)
TERMS = ApprovalTerms(minutes=30, self_approval=True, approvers=frozenset({7}))

CALLS = {
    "prod/fs/delete_all": ("prod", "fs", "delete_all"),
    "prod/fs/read": ("prod", "fs", "read"),
    "prod/git/delete_all": ("prod", "git", "delete_all"),
    "dev/fs/delete_all": ("dev", "fs", "delete_all"),
}
# An ask for the viewer role at each level of scope, with its terms.
LEVELS = {
    "tenant": Rule(ASK, ROLE, VIEWER, terms=TERMS),
    "toolbox": Rule(ASK, ROLE, VIEWER, toolbox="prod", terms=TERMS),
    "server": Rule(ASK, ROLE, VIEWER, toolbox="prod", server="fs", terms=TERMS),
    "tool": Rule(ASK, ROLE, VIEWER, toolbox="prod", server="fs", tool="delete_all", terms=TERMS),
}
EXPLAINED = {
    "tenant": "approval required by: every toolbox, role viewer",
    "toolbox": "approval required by: toolbox 'prod', role viewer",
    "server": "approval required by: toolbox 'prod', server 'fs', role viewer",
    "tool": "approval required by: toolbox 'prod', server 'fs', tool 'delete_all', role viewer",
}
COVERED = {
    "tenant": set(CALLS),
    "toolbox": {"prod/fs/delete_all", "prod/fs/read", "prod/git/delete_all"},
    "server": {"prod/fs/delete_all", "prod/fs/read"},
    "tool": {"prod/fs/delete_all"},
}


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("level", sorted(LEVELS))
@pytest.mark.parametrize(
    "who", [("viewer", VIEWER_ANNA), ("admin", ADMIN_BEN), ("tenant key", TENANT_KEY)]
)
def test_matrix_of_role_ask_level_and_call(who, level, call):
    name, subject = who
    decision = decide([LEVELS[level]], Defaults(), subject, *CALLS[call])
    if name == "viewer" and call in COVERED[level]:
        assert (decision.allowed, decision.ask, decision.effect) == (True, True, ASK)
        assert decision.reason == EXPLAINED[level]
        assert decision.terms == TERMS
    else:
        assert (decision.allowed, decision.ask, decision.reason) == (True, False, NO_RULE)
        assert decision.terms == DEFAULT_TERMS


@pytest.mark.parametrize(
    ("effects", "winner"),
    [((DENY, ASK), DENY), ((ASK, ALLOW), ASK), ((ALLOW, ASK, DENY), DENY)],
)
def test_a_tie_goes_to_deny_then_ask_then_allow(effects, winner):
    rules = [Rule(effect, toolbox="prod") for effect in effects]
    for ordered in (rules, rules[::-1]):
        decision = decide(ordered, Defaults(), ADMIN_BEN, "prod", "fs", "read")
        assert decision.effect == winner


def test_a_more_specific_allow_or_deny_overrides_a_broader_ask_and_the_other_way_round():
    ask_all = Rule(ASK, toolbox="prod")
    allow_key = Rule(ALLOW, KEY, "12", toolbox="prod")
    assert decide([ask_all, allow_key], Defaults(), TENANT_KEY, "prod", "fs", "x").effect == ALLOW
    deny_server = Rule(DENY, toolbox="prod", server="fs")
    ask_tool = Rule(ASK, tool="x")
    decision = decide([deny_server, ask_tool], Defaults(), ADMIN_BEN, "prod", "fs", "x")
    assert (decision.effect, decision.reason) == (ASK, "approval required by: tool 'x', everyone")


ASKED_BY_DEFAULT = f"approval required by: {ASK_DESTRUCTIVE}"


@pytest.mark.parametrize("subject", [VIEWER_ANNA, ADMIN_BEN, TENANT_KEY])
def test_ask_destructive_asks_every_caller_for_destructive_tools_only(subject):
    defaults = Defaults(ask_destructive=True)
    asked = decide([], defaults, subject, "prod", "fs", "delete_all", destructive=True)
    assert (asked.allowed, asked.ask, asked.reason, asked.rule) == (
        True,
        True,
        ASKED_BY_DEFAULT,
        None,
    )
    assert asked.terms == DEFAULT_TERMS  # a tenant admin or a named approver; no self
    plain = decide([], defaults, subject, "prod", "fs", "read", destructive=False)
    assert (plain.ask, plain.reason) == (False, NO_RULE)


def test_a_rule_for_the_tool_overrides_the_ask_default_a_broader_one_not():
    defaults = Defaults(ask_destructive=True)
    allow_tool = Rule(ALLOW, tool="delete_all")
    decision = decide([allow_tool], defaults, ADMIN_BEN, "prod", "fs", "delete_all", True)
    assert (decision.effect, decision.reason) == (ALLOW, "allowed by: tool 'delete_all', everyone")
    allow_toolbox = Rule(ALLOW, toolbox="prod")
    decision = decide([allow_toolbox], defaults, ADMIN_BEN, "prod", "fs", "delete_all", True)
    assert (decision.effect, decision.reason) == (ASK, ASKED_BY_DEFAULT)
    deny_toolbox = Rule(DENY, toolbox="prod")  # a broader deny is never loosened to ask
    decision = decide([deny_toolbox], defaults, ADMIN_BEN, "prod", "fs", "delete_all", True)
    assert (decision.allowed, decision.reason) == (False, "denied by: toolbox 'prod', everyone")
    ask_server = Rule(ASK, toolbox="prod", server="fs", terms=TERMS)  # keeps its terms
    decision = decide([ask_server], defaults, ADMIN_BEN, "prod", "fs", "delete_all", True)
    assert (decision.effect, decision.terms) == (ASK, TERMS)
    assert decision.reason == "approval required by: toolbox 'prod', server 'fs', everyone"
    ask_tool = Rule(ASK, tool="delete_all", terms=TERMS)  # the tool's rule: its own terms
    decision = decide([ask_tool], defaults, ADMIN_BEN, "prod", "fs", "delete_all", True)
    assert (decision.effect, decision.terms) == (ASK, TERMS)


def test_deny_destructive_to_keys_comes_before_ask_destructive():
    both = Defaults(deny_destructive_to_keys=True, ask_destructive=True)
    key = decide([], both, TENANT_KEY, "prod", "fs", "delete_all", destructive=True)
    assert (key.allowed, key.reason) == (False, f"denied by: {DESTRUCTIVE_TO_KEYS}")
    person = decide([], both, ADMIN_BEN, "prod", "fs", "delete_all", destructive=True)
    assert (person.effect, person.reason) == (ASK, ASKED_BY_DEFAULT)


def test_a_policy_with_only_the_ask_default_is_not_empty():
    assert not Policy(defaults=Defaults(ask_destructive=True)).empty
    assert Policy().empty
