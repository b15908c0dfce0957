"""A tenant's tool policies (who may call which tool) and its defaults from the tools'
annotations: listed, made, changed and deleted as the admin does, validated by the model
with the admin's texts (`toolboxes.models.policies`). An ask rule names its approvers by
username; terms on an allow or deny rule are refused as the admin refuses them."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Status

from api.actor import one
from api.history import ADDITION, CHANGE, DELETION, record
from api.pages import Page, PageQuery, page
from api.problems import invalid
from api.routes.tenants import ERRORS, actor_of
from api.schemas import PolicyDefaultsBody, PolicyDefaultsOut, PolicyIn, PolicyOut, PolicyPatch
from toolboxes.models import PolicyDefaults, Tenant, ToolPolicy
from toolboxes.models.policies import APPROVERS_NOT_MEMBERS, approvers_problem

router = Router(tags=["tool policies"])
BASE = "/tenants/{slug}/policies"
DEFAULTS = "/tenants/{slug}/policy-defaults"
READ = ("toolbox", "person", "api_key")


def no_such(field: str, text: str) -> Any:
    return invalid([{"field": field, "message": text}])


def references(tenant: Tenant, given: dict[str, Any]) -> dict[str, Any]:
    """The body's names as the model's fields: a toolbox by name, a member by username, a
    key by prefix, each looked up among the tenant's own (422 naming the field if not)."""
    fields = dict(given)
    if "toolbox" in fields:
        name = fields.pop("toolbox")
        fields["toolbox"] = None
        if name:
            fields["toolbox"] = tenant.toolboxes.filter(name=name).first()
            if fields["toolbox"] is None:
                raise no_such("toolbox", f"This tenant has no toolbox '{name}'.")
    if "person" in fields:
        username = fields.pop("person")
        fields["person"] = None
        if username:
            users = get_user_model()._default_manager.filter(
                username=username, memberships__tenant=tenant
            )
            fields["person"] = users.first()
            if fields["person"] is None:
                raise no_such("person", f"'{username}' is not a member of this tenant.")
    if "approvers" in fields:
        fields["approvers"] = approvers_of(tenant, fields["approvers"] or [])
    if "key" in fields:
        prefix = fields.pop("key")
        fields["api_key"] = None
        if prefix:
            fields["api_key"] = tenant.api_keys.filter(prefix=prefix).first()
            if fields["api_key"] is None:
                raise no_such("key", f"This tenant has no API key '{prefix}'.")
    return fields


def approvers_of(tenant: Tenant, usernames: list[str]) -> list[Any]:
    """An ask rule's approvers by username: members of the tenant (422 naming those who are
    not, with the admin's text)."""
    wanted = sorted(set(usernames))
    people = list(
        get_user_model()._default_manager.filter(username__in=wanted, memberships__tenant=tenant)
    )
    found = {person.get_username() for person in people}
    strangers = [name for name in wanted if name not in found]
    if strangers:
        raise no_such("approvers", APPROVERS_NOT_MEMBERS.format(names=", ".join(strangers)))
    return people


def saved(tenant: Tenant, rule: ToolPolicy, fields: dict[str, Any]) -> ToolPolicy:
    """Set `fields` on the rule, validate it whole (its approvers too) and save it."""
    people = fields.pop("approvers", None)
    for field, value in fields.items():
        setattr(rule, field, value)
    rule.full_clean()
    current = list(rule.approvers.all()) if people is None and rule.pk else people or []
    problem = approvers_problem(tenant, rule.effect, current)
    if problem is not None:
        raise no_such("approvers", problem)
    rule.save()
    if people is not None:
        rule.approvers.set(people)
    return rule


def rules_of(tenant: Tenant) -> Any:
    return tenant.tool_policies.select_related(*READ).prefetch_related("approvers")


def rule_of(tenant: Tenant, rule_id: int) -> ToolPolicy:
    return one(rules_of(tenant).filter(pk=rule_id), "policy", rule_id)


@router.get(
    BASE,
    response={200: Page[PolicyOut], **ERRORS},
    summary="List tool policies",
    description=(
        "Oldest first, a page at a time. Every member of the tenant reads them. The most "
        "specific rule decides a call: by scope (tool, server, toolbox, tenant), then by "
        "subject (key or person, group, role, everyone); deny wins a tie; no rule: allowed."
    ),
)
def list_policies(request: HttpRequest, slug: str, paging: Query[PageQuery]) -> Page[PolicyOut]:
    tenant = actor_of(request).tenant(slug)
    return page(rules_of(tenant), ("id",), paging, PolicyOut.of)


@router.post(
    BASE,
    response={201: PolicyOut, **ERRORS},
    summary="Create a tool policy",
    description=(
        "The tenant's admins (and operators). `toolbox` by name, `person` by username (a "
        "member), `key` by prefix; validated as the admin validates (a server without its "
        "toolbox, a value for another subject, a duplicate: 422 with the text)."
    ),
)
def create_policy(request: HttpRequest, slug: str, payload: PolicyIn) -> Status[PolicyOut]:
    actor = actor_of(request)
    tenant = actor.tenant(slug, change=True)
    rule = saved(tenant, ToolPolicy(tenant=tenant), references(tenant, payload.model_dump()))
    record(actor, rule, ADDITION)
    return Status(201, PolicyOut.of(rule))


@router.get(
    BASE + "/{rule_id}",
    response={200: PolicyOut, **ERRORS},
    summary="Get a tool policy",
    description="404 for a rule the tenant does not have.",
)
def get_policy(request: HttpRequest, slug: str, rule_id: int) -> PolicyOut:
    return PolicyOut.of(rule_of(actor_of(request).tenant(slug), rule_id))


@router.patch(
    BASE + "/{rule_id}",
    response={200: PolicyOut, **ERRORS},
    summary="Change a tool policy",
    description="A field left out is kept; the rule is validated again as a whole.",
)
def change_policy(request: HttpRequest, slug: str, rule_id: int, payload: PolicyPatch) -> PolicyOut:
    actor = actor_of(request)
    tenant = actor.tenant(slug, change=True)
    rule = rule_of(tenant, rule_id)
    given = payload.model_dump(exclude_unset=True)
    nullable = {"toolbox", "person", "key"}
    given = {name: value for name, value in given.items() if value is not None or name in nullable}
    saved(tenant, rule, references(tenant, given))
    record(actor, rule, CHANGE, fields=given)
    return PolicyOut.of(rule)


@router.delete(
    BASE + "/{rule_id}",
    response={204: None, **ERRORS},
    summary="Delete a tool policy",
    description="The calls it decided are decided by the next most specific rule, if any.",
)
def delete_policy(request: HttpRequest, slug: str, rule_id: int) -> HttpResponse:
    actor = actor_of(request)
    rule = rule_of(actor.tenant(slug, change=True), rule_id)
    record(actor, rule, DELETION)
    rule.delete()
    return HttpResponse(status=204)


@router.get(
    DEFAULTS,
    response={200: PolicyDefaultsOut, **ERRORS},
    summary="Get the tool policy defaults",
    description="The tenant's defaults from the tools' annotations, its secrets guard on "
    "tool results (all off until set) and its approval webhook (the signing secret only as "
    "whether one is stored).",
)
def get_defaults(request: HttpRequest, slug: str) -> PolicyDefaultsOut:
    tenant = actor_of(request).tenant(slug)
    return PolicyDefaultsOut.of(PolicyDefaults.objects.filter(tenant=tenant).first())


@router.put(
    DEFAULTS,
    response={200: PolicyDefaultsOut, **ERRORS},
    summary="Set the tool policy defaults",
    description="The tenant's admins (and operators); the next call of every client sees them. "
    "A webhook URL needs its signing secret (a stored one is kept when it is null).",
)
def set_defaults(request: HttpRequest, slug: str, payload: PolicyDefaultsBody) -> PolicyDefaultsOut:
    actor = actor_of(request)
    tenant = actor.tenant(slug, change=True)
    row = PolicyDefaults.objects.filter(tenant=tenant).first()
    created = row is None
    row = row or PolicyDefaults(tenant=tenant)
    given = payload.model_dump(exclude={"approval_webhook_secret"})
    for field, value in given.items():
        setattr(row, field, value)
    if payload.approval_webhook_secret is not None:
        row.approval_webhook_secret = payload.approval_webhook_secret
    row.full_clean()
    row.save()
    changed = [*given, *(["approval_webhook_secret"] if payload.approval_webhook_secret else [])]
    record(actor, row, ADDITION if created else CHANGE, fields=changed)
    return PolicyDefaultsOut.of(row)
