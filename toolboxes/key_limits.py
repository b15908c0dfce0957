"""An API key's own limits: which settings they override, and who may set what.

A key's value, where set, replaces the installation's (`WORKBENCH_KEY_RATE_LIMIT` and the
others below; empty: the installation's); the gateway applies it to that key's buckets.
An operator may set any value, 0 included (no limit for this key). A tenant's admin may only
hold a key below the installation's: a value at most the installation's, never 0 while the
installation limits keys. A value left as it was stays (an operator's raise survives a
tenant admin's edit of the label). The admin's key form and the API's keys share this rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class KeyLimitField:
    name: str  # the ApiKey field
    setting: str  # the installation's value it overrides
    rate_setting: str  # the rate that makes this field's bucket (itself, for a rate)

    @property
    def is_rate(self) -> bool:
        return self.setting == self.rate_setting

    def installation_value(self) -> float:
        """The installation's value in effect (a burst of 0 is the rate's, at least 1:
        `mcp_gateway.metatools.ratelimit.Limit.parse`)."""
        value = float(getattr(settings, self.setting))
        if self.is_rate:
            return value
        return value or max(1.0, float(int(getattr(settings, self.rate_setting))))

    def limited(self) -> bool:
        """Whether the installation limits keys here at all (a rate of 0: no limit)."""
        return float(getattr(settings, self.rate_setting)) > 0


FIELDS = (
    KeyLimitField("rate_limit", "WORKBENCH_KEY_RATE_LIMIT", "WORKBENCH_KEY_RATE_LIMIT"),
    KeyLimitField("rate_burst", "WORKBENCH_KEY_RATE_BURST", "WORKBENCH_KEY_RATE_LIMIT"),
    KeyLimitField(
        "open_rate_limit", "WORKBENCH_OPEN_KEY_RATE_LIMIT", "WORKBENCH_OPEN_KEY_RATE_LIMIT"
    ),
    KeyLimitField(
        "open_rate_burst", "WORKBENCH_OPEN_KEY_RATE_BURST", "WORKBENCH_OPEN_KEY_RATE_LIMIT"
    ),
)
NAMES = tuple(field.name for field in FIELDS)
LIFT = "Only an operator may lift a key's limit (0: no limit)."
ABOVE = "Only an operator may set this above the installation's {setting} = {value:g}."


def refusals(
    wanted: Mapping[str, Any], stored: Mapping[str, Any], *, operator: bool
) -> dict[str, str]:
    """Why a tenant's admin may not set these values, field by field (none: they may)."""
    if operator:
        return {}
    found = {}
    for field in FIELDS:
        value = wanted.get(field.name)
        if value is None or value == stored.get(field.name) or not field.limited():
            continue
        ceiling = field.installation_value()
        if field.is_rate and value == 0:
            found[field.name] = LIFT
        elif value > ceiling:
            found[field.name] = ABOVE.format(setting=field.setting, value=ceiling)
    return found


def help_text(field: KeyLimitField, *, operator: bool) -> str:
    """The admin's help for one field: the installation's value in effect, and its bounds."""
    unit = "calls a second" if field.is_rate else "calls at once before the rate applies"
    what = "use_tool" if field.name.startswith("rate") else "open_toolbox"
    if not field.limited():
        in_effect = f"no limit ({field.rate_setting} = 0)"
    else:
        in_effect = f"{field.installation_value():g} ({field.setting})"
    text = f"{what} {unit}. Empty: the installation's, {in_effect}."
    if operator or not field.limited():
        return text + (" 0: no limit for this key." if field.is_rate else "")
    return text + f" At most {field.installation_value():g}: only operators may raise it."
