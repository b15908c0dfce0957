"""What a credential's member may see and change: the admin's scoping (`kernel.roles`),
cut further by the credential: a personal API token (one tenant, read-only, if so made) or
an OAuth sign-in for the API (the tenant chosen on the consent page).

Another tenant's object answers 404, exactly as one that does not exist; a write the
owner's role or the token does not allow answers 403.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from accounts.models import ApiToken, OAuthGrant
from api.problems import Problem
from kernel.roles import can_manage, is_operator, role_in, tenant_ids
from toolboxes.models import Tenant

READ_ONLY = "This API token is read-only."
OPERATORS_ONLY = "Only operators may do this."
NARROWED = "This credential is limited to tenant '{slug}'."


def not_found(what: str, name: Any) -> Problem:
    return Problem(404, f"No {what} '{name}'.")


def one(rows: QuerySet[Any], what: str, name: Any) -> Any:
    """The row `rows` finds, or the 404 problem naming `what` and `name`."""
    found = rows.first()
    if found is None:
        raise not_found(what, name)
    return found


class Actor:
    def __init__(
        self, user: Any, *, token: ApiToken | None = None, grant: OAuthGrant | None = None
    ) -> None:
        self.user = user
        self.token = token
        self.grant = grant

    @property
    def tenant_id(self) -> int | None:
        """The one tenant the credential is narrowed to, if any."""
        if self.grant is not None:
            return self.grant.tenant_id
        return self.token.tenant_id if self.token is not None else None

    @property
    def read_only(self) -> bool:
        return self.token is not None and self.token.read_only

    @property
    def rate_key(self) -> str:
        """What the rate limit counts: the token, or the sign-in (all its tokens)."""
        return f"token-{self.token.prefix}" if self.token is not None else f"grant-{self.grant_pk}"

    @property
    def grant_pk(self) -> int:
        return self.grant.pk if self.grant is not None else 0

    @property
    def label(self) -> str:
        """How the admin's history names the credential."""
        if self.token is not None:
            return f"API token {self.token}"
        return f"OAuth sign-in #{self.grant_pk}"

    @property
    def operator(self) -> bool:
        return is_operator(self.user)

    def tenants(self) -> QuerySet[Tenant]:
        """The tenants the token's owner sees, cut to the token's one tenant if narrowed."""
        queryset = Tenant.objects.all()
        if not self.operator:
            queryset = queryset.filter(pk__in=tenant_ids(self.user))
        if self.tenant_id is not None:
            queryset = queryset.filter(pk=self.tenant_id)
        return queryset

    def tenant(self, slug: str, *, change: bool = False) -> Tenant:
        """The tenant of `slug` if seen (else 404); with `change`, 403 unless it may change."""
        tenant: Tenant = one(self.tenants().filter(slug=slug), "tenant", slug)
        if change:
            self.may_change(tenant)
        return tenant

    def may_write(self) -> None:
        if self.read_only:
            raise Problem(403, READ_ONLY)

    def may_change(self, tenant: Tenant) -> None:
        self.may_write()
        if not can_manage(self.user, tenant.pk):
            role = role_in(self.user, tenant.pk)
            raise Problem(
                403,
                f"Your role in tenant '{tenant.slug}' is {role}: only its admins may change it.",
            )

    def may_operate(self) -> None:
        """What only operators do (tenants, the catalog), with a token not narrowed."""
        self.may_write()
        if not self.operator:
            raise Problem(403, OPERATORS_ONLY)
        if self.tenant_id is not None:
            slug = Tenant.objects.filter(pk=self.tenant_id).values_list("slug", flat=True).first()
            raise Problem(403, NARROWED.format(slug=slug))
