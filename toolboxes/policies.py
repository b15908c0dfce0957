"""A tenant's tool policies read as one value (`kernel.tool_policy.Policy`): its rules, its
annotation defaults, and what the rules need of its members (each one's role, and the
identity provider's groups seen at their last sign-in). The gateway's snapshot
(`mcp_gateway.database.reads`) and the admin's "who may call this" both read it here.

The members' facts are read through the reverse relations `accounts` declares
(`memberships`, `sso_identities`), so this app imports none above it. `who_may_call`:
the decision for every caller of a tenant, for the admin's "who may call this". A change of a rule,
the defaults, a membership or a sign-in's groups moves the tenant's version
(`toolboxes.signals`, `accounts.oauth_revocation`, `accounts.policy_signals`).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from django.contrib.auth import get_user_model

from kernel import approvals, tool_policy
from kernel.roles import ROLES
from toolboxes.models import PolicyDefaults, Server, Tenant, ToolPin, ToolPolicy


def tenant_policy(tenant: Tenant) -> tool_policy.Policy:
    defaults_row = PolicyDefaults.objects.filter(tenant=tenant).first()
    defaults = defaults_row.as_defaults() if defaults_row is not None else tool_policy.Defaults()
    rows = (
        ToolPolicy.objects.filter(tenant=tenant)
        .select_related("toolbox", "person", "api_key")
        .prefetch_related("approvers")  # an "ask" rule's terms: no query per rule
        .order_by("pk")
    )
    rules = tuple(row.as_rule() for row in rows)
    if not rules and not defaults.any:
        return tool_policy.EMPTY  # nothing can be denied: no members' facts needed
    roles = dict(tenant.memberships.values_list("user_id", "role"))
    groups: dict[int, set[str]] = {}
    if any(rule.subject == tool_policy.GROUP for rule in rules):
        seen = (
            get_user_model()
            ._default_manager.filter(pk__in=roles, sso_identities__isnull=False)
            .values_list("pk", "sso_identities__groups")
        )
        for user_id, names in seen:
            groups.setdefault(user_id, set()).update(
                name for name in names or () if isinstance(name, str)
            )
    members = {
        user_id: (role, frozenset(groups.get(user_id, ()))) for user_id, role in roles.items()
    }
    return tool_policy.Policy(rules, defaults, MappingProxyType(members))


@dataclass(frozen=True, slots=True)
class Verdict:
    """One line of "who may call this": who, and the decision with its explanation."""

    kind: str  # "role", "member", "key"
    who: str
    allowed: bool
    reason: str
    ask: bool = False  # allowed once a person approves each call
    approvers: str = ""  # who approves, when asked ("the tenant's admins and bob")

    @property
    def may(self) -> str:
        """The "may call" column: allowed, denied or approval required."""
        if not self.allowed:
            return "denied"
        return "approval required" if self.ask else "allowed"


def claims_destructive(tenant: Tenant, toolbox: str, server: str, tool: str) -> bool:
    """What the tool's server last said of it (its pinned offer, else its last check):
    whether it is annotated destructive."""
    found = Server.objects.filter(toolbox__tenant=tenant, toolbox__name=toolbox, name=server)
    row = found.only("pk", "last_check_tools").first()
    if row is None:
        return False
    offered = ToolPin.objects.filter(server=row, name=tool).values_list(
        "offered_definition", flat=True
    )
    definitions = [
        *offered,
        *(item for item in row.last_check_tools or [] if isinstance(item, dict)),
    ]
    for definition in definitions:
        if isinstance(definition, dict) and definition.get("name", tool) == tool:
            return tool_policy.is_destructive(definition.get("annotations"))
    return False


def who_may_call(
    tenant: Tenant, toolbox: str, server: str, tool: str, destructive: bool
) -> list[Verdict]:
    """The decision for every kind of caller of the tenant: a member of each role (in no
    group), each member (with their groups), each usable API key (a personal key as its
    owner)."""
    policy = tenant_policy(tenant)
    verdicts: list[Verdict] = []
    names = dict(tenant.memberships.values_list("user_id", "user__username"))

    def add(kind: str, who: str, subject: tool_policy.Subject) -> None:
        decision = policy.decide(subject, toolbox, server, tool, destructive)
        named = sorted(names.get(user_id, str(user_id)) for user_id in decision.terms.approvers)
        approvers_text = approvals.approvers_text(named) if decision.ask else ""
        if decision.ask and decision.terms.self_approval:
            approvers_text += ", or the caller in person"
        verdicts.append(
            Verdict(kind, who, decision.allowed, decision.reason, decision.ask, approvers_text)
        )

    for role in ROLES:
        add("role", f"any {role}", tool_policy.Subject(person=-1, role=role))
    members = tenant.memberships.select_related("user").order_by("user__username")
    for membership in members:
        role, groups = policy.members.get(membership.user_id, (membership.role, frozenset()))
        subject = tool_policy.Subject(None, membership.user_id, role, groups)
        add("member", f"{membership.user.get_username()} ({role})", subject)
    for api_key in tenant.api_keys.usable().select_related("owner").order_by("pk"):
        if api_key.owner_id is None:
            add("key", f"{api_key} (tenant key)", tool_policy.Subject(api_key.pk))
            continue
        role, groups = policy.members.get(api_key.owner_id, ("", frozenset()))
        subject = tool_policy.Subject(api_key.pk, api_key.owner_id, role, groups)
        add("key", f"{api_key} (personal: {api_key.owner.get_username()})", subject)
    return verdicts
