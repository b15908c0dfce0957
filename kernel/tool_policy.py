"""Who may call which tool: a tenant's rules and the one function that decides (issue 36).

A rule has a scope (the tenant, a toolbox, a server of it, a tool: each part optional), a
subject (everyone, a role, an identity provider's group, a person, an API key) and an
effect. The most specific rule that applies to the call wins: by scope first (a tool's
rule over a server's, a server's over a toolbox's, a toolbox's over the tenant's), then by
subject (a key or a person over a group, a group over a role, a role over everyone), and
of a tie deny wins, then ask. No rule: allowed (what Workbench did before rules existed).
"ask" allows the tool to be listed and each call to run once a person approved it
(`kernel.approvals`: the terms, the digest that binds the arguments, who may decide).

The tenant's defaults from the tools' annotations come after an admin's rules for the tool
itself and before every broader rule: annotations are the server's claims, so an admin's
choice for the tool overrides them, while a toolbox-wide "allow" does not quietly undo
"deny destructive tools to tenant keys". "Ask before every destructive tool" only tightens:
it never turns a broader deny into an ask, and a broader ask keeps its own terms.

Plain values and no Django: the gateway decides each call with it, the admin shows "who
may call this" with it. The roles' names are `kernel.roles`'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kernel.approvals import DEFAULT_TERMS, ApprovalTerms

ALLOW = "allow"
DENY = "deny"
ASK = "ask"  # allowed once a person approves the exact call (kernel.approvals)
EFFECTS = (ALLOW, DENY, ASK)
# Which effect wins a tie between equally specific rules: deny, then ask, then allow.
EFFECT_RANK = {ALLOW: 0, ASK: 1, DENY: 2}

EVERYONE = "everyone"
ROLE = "role"
GROUP = "group"
PERSON = "person"
KEY = "key"
SUBJECT_KINDS = (EVERYONE, ROLE, GROUP, PERSON, KEY)
# How specific a subject is: a key or a person over a group over a role over everyone.
SUBJECT_RANK = {EVERYONE: 0, ROLE: 1, GROUP: 2, PERSON: 3, KEY: 3}

NO_RULE = "allowed: no rule applies"


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule as the decision reads it. Scope parts empty: any. `value`: the role's or
    the group's name, the person's or the key's id (as a string); `label`: how the
    explanation names the subject ("alice", "wb_ab12cd34_… (ci)")."""

    effect: str
    subject: str = EVERYONE
    value: str = ""
    toolbox: str = ""
    server: str = ""
    tool: str = ""
    label: str = ""
    rule_id: int = 0
    terms: ApprovalTerms = DEFAULT_TERMS  # an "ask" rule's

    @property
    def scope_rank(self) -> tuple[bool, bool, bool]:
        return (bool(self.tool), bool(self.server), bool(self.toolbox))

    def covers(self, toolbox: str, server: str, tool: str) -> bool:
        return (
            (not self.toolbox or self.toolbox == toolbox)
            and (not self.server or self.server == server)
            and (not self.tool or self.tool == tool)
        )

    def scope_text(self) -> str:
        parts = []
        if self.toolbox:
            parts.append(f"toolbox '{self.toolbox}'")
        if self.server:
            parts.append(f"server '{self.server}'")
        if self.tool:
            parts.append(f"tool '{self.tool}'")
        return ", ".join(parts) if parts else "every toolbox"

    def subject_text(self) -> str:
        if self.subject == EVERYONE:
            return "everyone"
        if self.subject == ROLE:
            return f"role {self.value}"
        if self.subject == GROUP:
            return f"group '{self.value}'"
        return f"{self.subject} {self.label or self.value}"


@dataclass(frozen=True, slots=True)
class Subject:
    """Who calls: an API key (a tenant's, or a member's personal key) or a member's OAuth
    sign-in. `person`: the member it acts as (None: a tenant key); `role` and `groups`:
    that member's in the tenant."""

    key_id: int | None = None
    person: int | None = None
    role: str = ""
    groups: frozenset[str] = frozenset()

    @property
    def is_tenant_key(self) -> bool:
        return self.person is None

    def matches(self, rule: Rule) -> bool:
        if rule.subject == EVERYONE:
            return True
        if rule.subject == ROLE:
            return bool(self.role) and rule.value == self.role
        if rule.subject == GROUP:
            return rule.value in self.groups
        if rule.subject == PERSON:
            return self.person is not None and rule.value == str(self.person)
        if rule.subject == KEY:
            return self.key_id is not None and rule.value == str(self.key_id)
        return False


@dataclass(frozen=True, slots=True)
class Defaults:
    """The tenant's one-click defaults from the tools' annotations."""

    deny_destructive_to_keys: bool = False
    ask_destructive: bool = False  # a person approves each call of a destructive tool

    @property
    def any(self) -> bool:
        return self.deny_destructive_to_keys or self.ask_destructive


DESTRUCTIVE_TO_KEYS = "the tenant's default: destructive tools denied to tenant keys"
ASK_DESTRUCTIVE = "the tenant's default: a person approves each call of a destructive tool"


@dataclass(frozen=True, slots=True)
class Decision:
    """`allowed`: the caller may see and call the tool; `ask`: each call waits for a
    person's approval on `terms` (a tool to ask for is listed as usual)."""

    allowed: bool
    reason: str  # "denied by: toolbox 'prod', role viewer"
    rule: Rule | None = None  # None: no rule, or the tenant's default
    ask: bool = False
    terms: ApprovalTerms = DEFAULT_TERMS

    @property
    def effect(self) -> str:
        if not self.allowed:
            return DENY
        return ASK if self.ask else ALLOW


ALLOWED = Decision(True, NO_RULE)
VERBS = {ALLOW: "allowed by", DENY: "denied by", ASK: "approval required by"}


def _explained(rule: Rule) -> Decision:
    reason = f"{VERBS[rule.effect]}: {rule.scope_text()}, {rule.subject_text()}"
    return Decision(rule.effect != DENY, reason, rule, ask=rule.effect == ASK, terms=rule.terms)


@dataclass(frozen=True, slots=True)
class Policy:
    """A tenant's rules and defaults, and what it knows of its members (person id: their
    role and groups), as one immutable value."""

    rules: tuple[Rule, ...] = ()
    defaults: Defaults = Defaults()
    members: Mapping[int, tuple[str, frozenset[str]]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    @property
    def empty(self) -> bool:
        """Nothing can be denied: every call is allowed without asking."""
        return not self.rules and not self.defaults.any

    def subject(self, key_id: int | None, person: int | None) -> Subject:
        role, groups = self.members.get(person, ("", frozenset())) if person else ("", frozenset())
        return Subject(key_id, person, role, groups)

    def decide(
        self, subject: Subject, toolbox: str, server: str, tool: str, destructive: bool = False
    ) -> Decision:
        return decide(self.rules, self.defaults, subject, toolbox, server, tool, destructive)


EMPTY = Policy()


def decide(
    rules: Iterable[Rule],
    defaults: Defaults,
    subject: Subject,
    toolbox: str,
    server: str,
    tool: str,
    destructive: bool = False,
) -> Decision:
    """Whether `subject` may call `tool` of `server` in `toolbox`, and why. `destructive`:
    the tool's `destructiveHint` as its server declares it."""
    best: Rule | None = None
    best_rank: tuple[tuple[bool, bool, bool], int, int] | None = None
    for rule in rules:
        if not rule.covers(toolbox, server, tool) or not subject.matches(rule):
            continue
        rank = (rule.scope_rank, SUBJECT_RANK[rule.subject], EFFECT_RANK[rule.effect])
        if best_rank is None or rank > best_rank:
            best, best_rank = rule, rank
    if best is not None and best.tool:
        return _explained(best)  # an admin's choice for the tool: over the server's claims
    if defaults.deny_destructive_to_keys and destructive and subject.is_tenant_key:
        return Decision(False, f"denied by: {DESTRUCTIVE_TO_KEYS}")
    # The default only tightens an allow: a broader deny stands (asking would loosen it),
    # and a broader ask keeps its own terms.
    if defaults.ask_destructive and destructive and (best is None or best.effect == ALLOW):
        return Decision(True, f"{VERBS[ASK]}: {ASK_DESTRUCTIVE}", ask=True)
    return _explained(best) if best is not None else ALLOWED


def is_destructive(annotations: Mapping[str, object] | None) -> bool:
    """What a tool's annotations (as listed, by their wire names) claim. The protocol's
    default for `destructiveHint` is true, but only when `readOnlyHint` is false; a tool
    that says nothing is not taken as destructive here: the default denies what a server
    declares, and an admin's rule covers the rest."""
    if not annotations:
        return False
    return (
        annotations.get("destructiveHint") is True and annotations.get("readOnlyHint") is not True
    )
