"""A tenant's tool policies in the configuration document: `"policies"` beside
`"toolboxes"`, written only when the tenant has a rule or a default switched on.

```json
"policies": {
  "denyDestructiveToKeys": true,
  "askDestructive": true,
  "rules": [
    {"toolbox": "prod", "server": "db", "tool": "drop_table", "role": "viewer", "effect": "deny"},
    {"tool": "drop_table", "key": "ab12cd34", "effect": "allow"},
    {"toolbox": "prod", "tool": "deploy", "effect": "ask", "approvalMinutes": 30,
     "selfApproval": false, "approvers": ["ada"]}
  ]
}
```

A rule's scope is `toolbox`, `server` and `tool` (each left out: all), its subject at most
one of `role`, `group`, `person` (a member's username) or `key` (an API key's prefix;
none: everyone), its effect `allow`, `deny` or `ask` (a person approves each call; an ask
rule's terms: `approvalMinutes`, default 10, `selfApproval`, default false, `approvers`,
members' usernames; written only when not their defaults, refused on other rules).
`askDestructive` and `guardSecrets` are written only when on. Imported, a document with `"policies"`
makes the tenant's rules exactly its list (after its toolboxes, which the rules name);
one without leaves the rules as they are (a document written before policies existed
never drops a deny). Every problem is named by its JSON path, with the model's texts.
"""

from __future__ import annotations

from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from pydantic import Field
from pydantic import ValidationError as PydanticError

from kernel import approvals, tool_policy
from toolboxes.config_file.schema import ConfigError, _Spec, config_error, json_path
from toolboxes.models import PolicyDefaults, Tenant, ToolPolicy
from toolboxes.models.policies import APPROVERS_NOT_MEMBERS, approvers_problem

KEY = "policies"
SUBJECT_KEYS = {"role": "role", "group": "group", "person": "person", "key": "api_key"}
# The model's fields as the document names them, in its error paths.
DOCUMENT_NAMES = {
    "api_key": "key",
    "approval_minutes": "approvalMinutes",
    "self_approval": "selfApproval",
}


class RuleSpec(_Spec):
    toolbox: str = ""
    server: str = ""
    tool: str = ""
    role: str | None = None
    group: str | None = None
    person: str | None = None
    key: str | None = None
    effect: Literal["allow", "deny", "ask"]
    approval_minutes: int = Field(default=approvals.DEFAULT_MINUTES, alias="approvalMinutes")
    self_approval: bool = Field(default=False, alias="selfApproval")
    approvers: list[str] = Field(default_factory=list)


class PoliciesSpec(_Spec):
    deny_destructive_to_keys: bool = Field(default=False, alias="denyDestructiveToKeys")
    ask_destructive: bool = Field(default=False, alias="askDestructive")
    guard_secrets: bool = Field(default=False, alias="guardSecrets")
    rules: list[RuleSpec] = Field(default_factory=list)


def export_policies(tenant: Tenant) -> dict[str, Any] | None:
    """The tenant's rules and defaults, None when it has neither (the key left out)."""
    defaults = PolicyDefaults.objects.filter(tenant=tenant).first()
    rows = (
        tenant.tool_policies.select_related("toolbox", "person", "api_key")
        .prefetch_related("approvers")
        .order_by("pk")
    )
    rules = []
    for row in rows:
        rule: dict[str, Any] = {}
        for name in ("server", "tool"):
            if getattr(row, name):
                rule[name] = getattr(row, name)
        if row.toolbox_id:
            rule = {"toolbox": row.toolbox.name, **rule}
        if row.subject == tool_policy.ROLE:
            rule["role"] = row.role
        elif row.subject == tool_policy.GROUP:
            rule["group"] = row.group
        elif row.subject == tool_policy.PERSON:
            rule["person"] = row.person.get_username()
        elif row.subject == tool_policy.KEY:
            rule["key"] = row.api_key.prefix
        rule["effect"] = row.effect
        rules.append(rule | _terms(row))
    deny_destructive = bool(defaults and defaults.deny_destructive_to_keys)
    ask_destructive = bool(defaults and defaults.ask_destructive)
    guard_secrets = bool(defaults and defaults.guard_secrets)
    if not rules and not deny_destructive and not ask_destructive and not guard_secrets:
        return None
    exported: dict[str, Any] = {"denyDestructiveToKeys": deny_destructive}
    if ask_destructive:  # written when on: documents from before it read the same
        exported["askDestructive"] = True
    if guard_secrets:  # written when on: documents from before it read the same
        exported["guardSecrets"] = True
    return {**exported, "rules": rules}


def _terms(row: ToolPolicy) -> dict[str, Any]:
    """An ask rule's terms, those not at their defaults."""
    terms: dict[str, Any] = {}
    if row.approval_minutes != approvals.DEFAULT_MINUTES:
        terms["approvalMinutes"] = row.approval_minutes
    if row.self_approval:
        terms["selfApproval"] = True
    named = sorted(person.get_username() for person in row.approvers.all())
    if named:
        terms["approvers"] = named
    return terms


def _approvers(tenant: Tenant, spec: RuleSpec, where: tuple[str | int, ...]) -> list[Any]:
    """The rule's approvers, members of the tenant, as the admin checks them."""
    wanted = sorted(set(spec.approvers))
    people = list(
        get_user_model()._default_manager.filter(username__in=wanted, memberships__tenant=tenant)
    )
    strangers = sorted(set(wanted) - {person.get_username() for person in people})
    problem = (
        APPROVERS_NOT_MEMBERS.format(names=", ".join(strangers))
        if strangers
        else approvers_problem(tenant, spec.effect, people)
    )
    if problem is not None:
        raise ConfigError(f"{json_path(*where, 'approvers')}: {problem}")
    return people


def _rule(tenant: Tenant, spec: RuleSpec, where: tuple[str | int, ...]) -> ToolPolicy:
    given = [name for name in SUBJECT_KEYS if getattr(spec, name) is not None]
    if len(given) > 1:
        raise ConfigError(f"{json_path(*where)}: name one of {', '.join(given)}, not several")
    rule = ToolPolicy(
        tenant=tenant,
        server=spec.server,
        tool=spec.tool,
        effect=spec.effect,
        subject="everyone",
        approval_minutes=spec.approval_minutes,
        self_approval=spec.self_approval,
    )
    if spec.toolbox:
        rule.toolbox = tenant.toolboxes.filter(name=spec.toolbox).first()
        if rule.toolbox is None:
            raise ConfigError(f"{json_path(*where, 'toolbox')}: no toolbox '{spec.toolbox}'")
    if given:
        name = given[0]
        value = getattr(spec, name)
        rule.subject = {"role": "role", "group": "group", "person": "person", "key": "key"}[name]
        if name in ("role", "group"):
            setattr(rule, name, value)
        elif name == "person":
            users = get_user_model()._default_manager.filter(username=value)
            rule.person = users.filter(memberships__tenant=tenant).first()
            if rule.person is None:
                raise ConfigError(f"{json_path(*where, 'person')}: '{value}' is not a member")
        else:
            rule.api_key = tenant.api_keys.filter(prefix=value).first()
            if rule.api_key is None:
                raise ConfigError(f"{json_path(*where, 'key')}: no API key '{value}'")
    try:
        rule.full_clean()
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        path = where if field == "__all__" else (*where, DOCUMENT_NAMES.get(field, field))
        raise ConfigError(f"{json_path(*path)}: {messages[0]}") from None
    people = _approvers(tenant, spec, where)
    rule.save()
    rule.approvers.set(people)
    return rule


def import_policies(tenant: Tenant, data: Any) -> None:
    """The tenant's rules and defaults become the document's `"policies"` (call after its
    toolboxes are imported, in the same transaction)."""
    try:
        spec = PoliciesSpec.model_validate(data)
    except PydanticError as exc:
        raise config_error(exc, KEY) from None
    tenant.tool_policies.all().delete()
    for index, rule in enumerate(spec.rules):
        _rule(tenant, rule, (KEY, "rules", index))
    defaults, _ = PolicyDefaults.objects.get_or_create(tenant=tenant)
    wanted = (spec.deny_destructive_to_keys, spec.ask_destructive, spec.guard_secrets)
    now = (defaults.deny_destructive_to_keys, defaults.ask_destructive, defaults.guard_secrets)
    if now != wanted:
        (
            defaults.deny_destructive_to_keys,
            defaults.ask_destructive,
            defaults.guard_secrets,
        ) = wanted
        defaults.save()
