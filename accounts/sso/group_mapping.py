"""Groups to memberships: the operators' mapping (the admin's rows and
`WORKBENCH_OIDC_GROUP_MAPPINGS`), applied at every sign-in.

Memberships that came from a group follow the groups (added, re-roled, removed);
memberships added by hand are never touched. A mapping to the operators applies at its
own provider only; one without a provider (a row saved before that was required) makes
nobody an operator. Where several groups give one tenant, the
higher role wins (admin over viewer).
"""

from __future__ import annotations

import fnmatch
import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction

from accounts.models import Membership, SsoGroupMapping, SsoIdentity, SsoMembership
from kernel.roles import ADMIN, OPERATORS_GROUP, VIEWER, forget
from toolboxes.models import Tenant

RANK = {VIEWER: 1, ADMIN: 2}
log = logging.getLogger("workbench.sso")


@dataclass(frozen=True)
class Rule:
    group: str  # a name or an fnmatch pattern (case-sensitive, as providers' group names are)
    provider: str = ""
    tenant_id: int | None = None
    role: str = VIEWER
    operators: bool = False

    def matches(self, provider: str, group: str) -> bool:
        if self.operators and not self.provider:
            return False  # saved before a provider was required (issue 31): inert
        if self.provider and self.provider != provider:
            return False
        return fnmatch.fnmatchcase(group, self.group)


def settings_rules() -> list[Rule]:
    """`WORKBENCH_OIDC_GROUP_MAPPINGS` (its shape checked as the settings load:
    `providers.check_mappings`)."""
    rules = []
    slugs = dict(Tenant.objects.values_list("slug", "pk"))
    for item in settings.WORKBENCH_OIDC_GROUP_MAPPINGS:
        provider = item.get("provider", "")
        if item.get("operators"):
            rules.append(Rule(item["group"], provider, operators=True))
        elif item.get("tenant") in slugs:
            role = item.get("role", VIEWER)
            rules.append(Rule(item["group"], provider, slugs[item["tenant"]], role))
        # A tenant not (yet) created maps nothing: the mapping can be committed first.
    return rules


def all_rules() -> list[Rule]:
    rows = SsoGroupMapping.objects.all()
    admin_rules = [
        Rule(row.group, row.provider, row.tenant_id, row.role, row.operators) for row in rows
    ]
    return [*admin_rules, *settings_rules()]


@dataclass
class Wanted:
    tenants: dict[int, tuple[str, str]]  # tenant id -> (role, the group that gave it)
    operator: bool


def wanted(provider: str, groups: list[str], rules: list[Rule] | None = None) -> Wanted:
    result = Wanted({}, False)
    for rule in rules if rules is not None else all_rules():
        for group in groups:
            if not rule.matches(provider, group):
                continue
            if rule.operators:
                result.operator = True
            elif rule.tenant_id is not None:
                current = result.tenants.get(rule.tenant_id)
                if current is None or RANK[rule.role] > RANK[current[0]]:
                    result.tenants[rule.tenant_id] = (rule.role, group)
    return result


def apply(identity: SsoIdentity, groups: list[str]) -> Wanted:
    """Make the identity's user's memberships from groups follow `groups`."""
    want = wanted(identity.provider, groups)
    user = identity.user
    changes: list[str] = []  # for the log: who got or lost what, through which group
    with transaction.atomic():
        held = {m.tenant_id: m for m in Membership.objects.select_for_update().filter(user=user)}
        given = {
            link.membership_id: link for link in SsoMembership.objects.filter(membership__user=user)
        }
        for tenant_id, membership in held.items():
            link = given.get(membership.pk)
            if link is None:
                continue  # added by hand: stays as it is
            if tenant_id not in want.tenants:
                membership.delete()
                changes.append(f"removed from tenant {tenant_id}")
                continue
            role, group = want.tenants[tenant_id]
            if membership.role != role:
                changes.append(f"{membership.role} → {role} in tenant {tenant_id} ({group})")
                membership.role = role
                membership.save(update_fields=["role"])
            if link.group != group or link.identity_id != identity.pk:
                link.group, link.identity = group, identity
                link.save(update_fields=["group", "identity"])
        for tenant_id, (role, group) in want.tenants.items():
            if tenant_id in held:
                continue
            membership = Membership.objects.create(user=user, tenant_id=tenant_id, role=role)
            SsoMembership.objects.create(membership=membership, identity=identity, group=group)
            changes.append(f"{role} in tenant {tenant_id} ({group})")
        was_operator = identity.operator_from_groups
        _operators(identity, want.operator)
        if identity.operator_from_groups != was_operator:
            changes.append("made an operator" if want.operator else "no longer an operator")
        staff = want.operator or user.is_superuser or Membership.objects.filter(user=user).exists()
        staff = staff or user.groups.filter(name=OPERATORS_GROUP).exists()
        if user.is_staff != staff:
            user.is_staff = staff
            user.save(update_fields=["is_staff"])
    forget(user)
    if changes:
        log.info(
            "sso memberships changed",
            extra={"provider": identity.provider, "user": user.pk, "changes": changes},
        )
    return want


def _operators(identity: SsoIdentity, wanted_operator: bool) -> None:
    user: Any = identity.user
    if wanted_operator and not identity.operator_from_groups:
        group, _ = Group.objects.get_or_create(name=OPERATORS_GROUP)
        if not user.groups.filter(pk=group.pk).exists():
            user.groups.add(group)
            identity.operator_from_groups = True
    elif not wanted_operator and identity.operator_from_groups:
        user.groups.remove(*Group.objects.filter(name=OPERATORS_GROUP))
        identity.operator_from_groups = False
    identity.save(update_fields=["operator_from_groups"])
