"""Who may do what: the one question the admin, the gateway's OAuth sign-in and the
management API's actor ask, and the roles' names (their one home).

Operators (superusers, or members of the "operators" group) manage every tenant; tenant
members act only in their tenants, with a role per tenant (`accounts.Membership`, read
through the user's `memberships`, so that the kernel imports no app). The answers are
memoised on the user object, which Django loads afresh for every request.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ADMIN = "admin"
VIEWER = "viewer"
OPERATORS_GROUP = "operators"
ROLES = (ADMIN, VIEWER)

_OPERATOR_ATTRIBUTE = "_workbench_is_operator"
_ROLES_ATTRIBUTE = "_workbench_roles"


def is_operator(user: Any) -> bool:
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    cached = getattr(user, _OPERATOR_ATTRIBUTE, None)
    if cached is None:
        cached = bool(user.is_superuser or user.groups.filter(name=OPERATORS_GROUP).exists())
        setattr(user, _OPERATOR_ATTRIBUTE, cached)
    return cached


def roles_of(user: Any) -> dict[int, str]:
    """{tenant id: role} of an active user's memberships (operators' included, if any)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return {}
    cached = getattr(user, _ROLES_ATTRIBUTE, None)
    if cached is None:
        cached = dict(user.memberships.values_list("tenant_id", "role"))
        setattr(user, _ROLES_ATTRIBUTE, cached)
    return cached


def tenant_ids(user: Any, roles: Iterable[str] = ROLES) -> set[int]:
    """The tenants in which the user holds one of `roles` (not every tenant for operators:
    ask `is_operator` first)."""
    wanted = set(roles)
    return {tenant_id for tenant_id, role in roles_of(user).items() if role in wanted}


def role_in(user: Any, tenant_id: int | None) -> str | None:
    return roles_of(user).get(tenant_id) if tenant_id is not None else None


def can_manage(user: Any, tenant_id: int | None) -> bool:
    """May change the tenant's toolboxes, servers, keys and members, and reveal secrets."""
    return is_operator(user) or role_in(user, tenant_id) == ADMIN


def can_view(user: Any, tenant_id: int | None) -> bool:
    return is_operator(user) or role_in(user, tenant_id) is not None


def forget(user: Any) -> None:
    """Drop the memoised answers (after changing this user's memberships in-process)."""
    for attribute in (_OPERATOR_ATTRIBUTE, _ROLES_ATTRIBUTE):
        if hasattr(user, attribute):
            delattr(user, attribute)
