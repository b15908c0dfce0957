"""How the meta-tools see a caller for tool policies (`metatools.policy`): a tenant key,
a member's personal key (as the key and as its owner), an OAuth sign-in (as its member
only); and a tool list cut per caller."""

from __future__ import annotations

from types import MappingProxyType

from kernel.tool_policy import DENY, KEY, PERSON, ROLE, Policy, Rule, Subject
from mcp_gateway.metatools import policy
from mcp_gateway.snapshots.callers import Caller, KeyRecord
from mcp_gateway.snapshots.servers import TenantConfig


def caller(rules: tuple[Rule, ...], *, key_id=5, owner=None, grant=None) -> Caller:
    members = MappingProxyType({7: ("admin", frozenset({"ops"}))})
    tenant = TenantConfig(1, "acme", True, 1, (), policy=Policy(rules, members=members))
    record = KeyRecord(key_id, "abcd1234", "h", 1, False, None, None, 1, owner_id=owner)
    return Caller(record, tenant, grant_id=grant, person_id=owner)


def test_subjects_of_each_kind_of_caller():
    assert policy.subject_of(caller(())) == Subject(5)
    assert policy.subject_of(caller((), owner=7)) == Subject(5, 7, "admin", frozenset({"ops"}))
    signed_in = caller((), key_id=-3, owner=7, grant=3)
    assert policy.subject_of(signed_in) == Subject(None, 7, "admin", frozenset({"ops"}))


def test_a_key_rule_never_matches_a_sign_in_whose_grant_id_looks_like_it():
    rules = (Rule(DENY, KEY, "-3"), Rule(DENY, KEY, "3"))
    assert policy.decision(caller(rules, key_id=-3, owner=7, grant=3), "dev", "fs", "x").allowed


def test_the_pre_connect_decision_and_the_empty_policy():
    assert policy.decision(caller(()), "dev", "fs", "x") is None
    denied = policy.decision(caller((Rule(DENY, PERSON, "7"),), owner=7), "dev", "fs", "x")
    assert denied is not None and denied.reason == "denied by: every toolbox, person 7"


def test_entries_cut_per_caller():
    entries = [
        {"name": "read", "server": "fs", "toolbox": "dev"},
        {"name": "rm", "server": "fs", "toolbox": "dev", "annotations": {"destructiveHint": True}},
    ]
    admins_denied_rm = (Rule(DENY, ROLE, "admin", tool="rm"),)
    assert policy.callable_entries(caller(()), entries) is None
    assert policy.callable_entries(caller(admins_denied_rm), entries) is None  # a tenant key
    kept = policy.callable_entries(caller(admins_denied_rm, owner=7), entries)
    assert kept == entries[:1]
    assert policy.left_out(entries, kept) == "left out by tool policies: fs/rm"
