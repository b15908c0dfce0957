"""The decision of `kernel.tool_policy`: a matrix of role by rule level by where the
call goes, each with its exact explanation; then the subject's precedence, ties, and the
tenant's defaults from annotations."""

from __future__ import annotations

import pytest

from kernel.roles import ADMIN, VIEWER
from kernel.tool_policy import (
    ALLOW,
    DENY,
    EVERYONE,
    GROUP,
    KEY,
    NO_RULE,
    PERSON,
    ROLE,
    Defaults,
    Policy,
    Rule,
    Subject,
    decide,
    is_destructive,
)

VIEWER_ANNA = Subject(key_id=10, person=1, role=VIEWER, groups=frozenset({"wb-ops"}))
ADMIN_BEN = Subject(key_id=11, person=2, role=ADMIN)
TENANT_KEY = Subject(key_id=12)

# Where a call goes: (toolbox, server, tool)
CALLS = {
    "prod/fs/delete_all": ("prod", "fs", "delete_all"),
    "prod/fs/read": ("prod", "fs", "read"),
    "prod/git/delete_all": ("prod", "git", "delete_all"),
    "dev/fs/delete_all": ("dev", "fs", "delete_all"),
}

# A deny for the viewer role at each level of scope.
LEVELS = {
    "tenant": Rule(DENY, ROLE, VIEWER),
    "toolbox": Rule(DENY, ROLE, VIEWER, toolbox="prod"),
    "server": Rule(DENY, ROLE, VIEWER, toolbox="prod", server="fs"),
    "tool": Rule(DENY, ROLE, VIEWER, toolbox="prod", server="fs", tool="delete_all"),
}
EXPLAINED = {
    "tenant": "denied by: every toolbox, role viewer",
    "toolbox": "denied by: toolbox 'prod', role viewer",
    "server": "denied by: toolbox 'prod', server 'fs', role viewer",
    "tool": "denied by: toolbox 'prod', server 'fs', tool 'delete_all', role viewer",
}
# Which calls each level's rule covers.
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
def test_matrix_of_role_rule_level_and_call(who, level, call):
    name, subject = who
    decision = decide([LEVELS[level]], Defaults(), subject, *CALLS[call])
    if name == "viewer" and call in COVERED[level]:
        assert not decision.allowed
        assert decision.reason == EXPLAINED[level]
    else:
        assert decision.allowed
        assert decision.reason == NO_RULE


# An allow for admins, one level more specific than a deny for everyone, wins; one level
# less specific loses (scope comes before subject).
@pytest.mark.parametrize(
    ("deny", "allow", "admin_allowed", "reason"),
    [
        (
            Rule(DENY, toolbox="prod"),
            Rule(ALLOW, ROLE, ADMIN, toolbox="prod", server="fs"),
            True,
            "allowed by: toolbox 'prod', server 'fs', role admin",
        ),
        (
            Rule(DENY, toolbox="prod", server="fs"),
            Rule(ALLOW, ROLE, ADMIN, toolbox="prod"),
            False,
            "denied by: toolbox 'prod', server 'fs', everyone",
        ),
        (
            Rule(DENY, toolbox="prod", server="fs", tool="delete_all"),
            Rule(ALLOW, ROLE, ADMIN, toolbox="prod", server="fs"),
            False,
            "denied by: toolbox 'prod', server 'fs', tool 'delete_all', everyone",
        ),
        (
            Rule(DENY, toolbox="prod"),
            Rule(ALLOW, ROLE, ADMIN, tool="delete_all"),
            True,
            "allowed by: tool 'delete_all', role admin",
        ),
        (
            Rule(DENY, toolbox="prod"),
            Rule(ALLOW, ROLE, ADMIN, toolbox="prod"),
            True,
            "allowed by: toolbox 'prod', role admin",
        ),
    ],
)
def test_scope_first_then_subject(deny, allow, admin_allowed, reason):
    decision = decide([deny, allow], Defaults(), ADMIN_BEN, "prod", "fs", "delete_all")
    assert (decision.allowed, decision.reason) == (admin_allowed, reason)
    viewer = decide([deny, allow], Defaults(), VIEWER_ANNA, "prod", "fs", "delete_all")
    assert not viewer.allowed


def test_subject_precedence_key_and_person_over_group_over_role_over_everyone():
    rules = [
        Rule(DENY, EVERYONE, toolbox="prod"),
        Rule(ALLOW, ROLE, VIEWER, toolbox="prod"),
        Rule(DENY, GROUP, "wb-ops", toolbox="prod"),
        Rule(ALLOW, PERSON, "1", toolbox="prod", label="anna"),
    ]
    call = ("prod", "fs", "read")
    assert decide(rules, Defaults(), VIEWER_ANNA, *call).reason == (
        "allowed by: toolbox 'prod', person anna"
    )
    assert decide(rules[:3], Defaults(), VIEWER_ANNA, *call).reason == (
        "denied by: toolbox 'prod', group 'wb-ops'"
    )
    assert decide(rules[:2], Defaults(), VIEWER_ANNA, *call).reason == (
        "allowed by: toolbox 'prod', role viewer"
    )
    assert decide(rules[:1], Defaults(), VIEWER_ANNA, *call).reason == (
        "denied by: toolbox 'prod', everyone"
    )
    key_rule = Rule(ALLOW, KEY, "12", toolbox="prod", label="wb_abcd1234_… (ci)")
    assert decide([rules[0], key_rule], Defaults(), TENANT_KEY, *call).reason == (
        "allowed by: toolbox 'prod', key wb_abcd1234_… (ci)"
    )
    assert not decide([rules[0], key_rule], Defaults(), ADMIN_BEN, *call).allowed


def test_deny_wins_a_tie():
    rules = [Rule(ALLOW, PERSON, "1", toolbox="prod"), Rule(DENY, KEY, "10", toolbox="prod")]
    assert not decide(rules, Defaults(), VIEWER_ANNA, "prod", "fs", "read").allowed
    rules = [Rule(ALLOW, toolbox="prod"), Rule(DENY, toolbox="prod")]
    assert not decide(rules, Defaults(), ADMIN_BEN, "prod", "fs", "read").allowed


def test_a_key_rule_is_for_that_key_only_and_a_role_never_matches_a_tenant_key():
    rules = [Rule(DENY, KEY, "12"), Rule(DENY, ROLE, VIEWER), Rule(DENY, ROLE, ADMIN)]
    assert not decide(rules[:1], Defaults(), TENANT_KEY, "dev", "fs", "read").allowed
    assert decide(rules[:1], Defaults(), Subject(key_id=13), "dev", "fs", "read").allowed
    assert decide(rules[1:], Defaults(), TENANT_KEY, "dev", "fs", "read").allowed


DESTRUCTIVE = Defaults(deny_destructive_to_keys=True)


def test_default_denies_destructive_tools_to_tenant_keys_only():
    call = ("prod", "fs", "delete_all")
    decision = decide([], DESTRUCTIVE, TENANT_KEY, *call, destructive=True)
    assert not decision.allowed
    assert decision.reason == (
        "denied by: the tenant's default: destructive tools denied to tenant keys"
    )
    assert decide([], DESTRUCTIVE, TENANT_KEY, *call, destructive=False).allowed
    assert decide([], DESTRUCTIVE, ADMIN_BEN, *call, destructive=True).allowed
    assert decide([], Defaults(), TENANT_KEY, *call, destructive=True).allowed


def test_an_admins_rule_for_the_tool_overrides_the_annotation_default_a_broader_one_not():
    call = ("prod", "fs", "delete_all")
    for_tool = Rule(ALLOW, KEY, "12", tool="delete_all", label="ci")
    decision = decide([for_tool], DESTRUCTIVE, TENANT_KEY, *call, destructive=True)
    assert (decision.allowed, decision.reason) == (True, "allowed by: tool 'delete_all', key ci")
    for_toolbox = Rule(ALLOW, KEY, "12", toolbox="prod", label="ci")
    assert not decide([for_toolbox], DESTRUCTIVE, TENANT_KEY, *call, destructive=True).allowed


def test_policy_knows_its_members_and_says_when_it_cannot_deny():
    policy = Policy(
        rules=(Rule(DENY, GROUP, "wb-ops"),),
        members={1: (VIEWER, frozenset({"wb-ops"}))},
    )
    anna = policy.subject(key_id=None, person=1)
    assert anna == Subject(None, 1, VIEWER, frozenset({"wb-ops"}))
    assert (
        policy.decide(anna, "dev", "fs", "read").reason
        == "denied by: every toolbox, group 'wb-ops'"
    )
    assert policy.subject(key_id=5, person=None) == Subject(5)
    assert Policy().empty and not policy.empty
    assert not Policy(defaults=DESTRUCTIVE).empty


@pytest.mark.parametrize(
    ("annotations", "destructive"),
    [
        (None, False),
        ({}, False),
        ({"destructiveHint": True}, True),
        ({"destructiveHint": False}, False),
        ({"destructiveHint": True, "readOnlyHint": True}, False),
    ],
)
def test_destructive_as_the_annotations_claim(annotations, destructive):
    assert is_destructive(annotations) is destructive
