"""Django system checks of single sign-on's records (run before every management command,
`migrate` at an upgrade included).

A group mapping to the operators must name its provider (issue 31): without one, a group
of that name at any provider made operators. Rows saved before that rule are kept (an
operator may not know which provider they meant) but make nobody an operator
(`group_mapping.Rule.matches`); this check names each until it is given its provider.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, register
from django.core.checks import Warning as CheckWarning
from django.db import DatabaseError

from accounts.models import SsoGroupMapping

OPERATORS_WITHOUT_PROVIDER = (
    "The group mapping {pk} ({group} → operators) names no provider: it makes nobody an "
    "operator until it names one."
)
OPERATORS_WITHOUT_PROVIDER_HINT = (
    "Choose its provider in the admin (People and access > Group mappings)."
)


@register()
def operators_mappings_name_a_provider(
    app_configs: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    try:
        rows = list(SsoGroupMapping.objects.filter(operators=True, provider="").order_by("pk"))
    except DatabaseError:  # no database yet, or not migrated: no rows
        return []
    return [
        CheckWarning(
            OPERATORS_WITHOUT_PROVIDER.format(pk=row.pk, group=row.group),
            hint=OPERATORS_WITHOUT_PROVIDER_HINT,
            obj=row,
            id="accounts.W001",
        )
        for row in rows
    ]
