"""A tenant's MCP API keys: listed, made (the key answered once), changed (label, own
limits), revoked."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import HttpRequest
from ninja import Query, Router, Status

from api.actor import Actor, one
from api.history import ADDITION, CHANGE, record
from api.pages import Page, PageQuery, page
from api.problems import Problem, invalid
from api.routes.tenants import ERRORS, actor_of
from api.schemas import KeyCreated, KeyIn, KeyOut, KeyPatch
from toolboxes import key_limits
from toolboxes.models import ApiKey, Tenant

router = Router(tags=["api keys"])
BASE = "/tenants/{slug}/keys"


def key_of(tenant: Tenant, prefix: str) -> ApiKey:
    return one(tenant.api_keys.filter(prefix=prefix), "API key", prefix)


def may_limit(actor: Actor, wanted: dict[str, Any], stored: dict[str, Any]) -> None:
    """403 when a tenant's admin would raise a key above the installation's limits."""
    refused = key_limits.refusals(wanted, stored, operator=actor.operator)
    if refused:
        errors = [{"field": name, "message": message} for name, message in refused.items()]
        raise Problem(403, " ".join(sorted(set(refused.values()))), errors=errors)


@router.get(BASE, response={200: Page[KeyOut], **ERRORS}, summary="List API keys")
def list_keys(request: HttpRequest, slug: str, paging: Query[PageQuery]) -> Page[KeyOut]:
    """Newest first, as the admin lists them."""
    tenant = actor_of(request).tenant(slug)
    keys = tenant.api_keys.prefetch_related("toolboxes")
    return page(keys, ("-created_at", "-pk"), paging, KeyOut.of)


@router.post(
    BASE,
    response={201: KeyCreated, **ERRORS},
    summary="Create an API key",
    description=(
        "The full key is in this answer only (it is stored hashed). `toolboxes` limits it "
        "to those (empty: every toolbox of the tenant); `expires_in_days` makes it expire. "
        "Its own rate limits (null: the installation's): a tenant's admin may only set "
        "them at most the installation's (403 above), an operator any."
    ),
)
def create_key(request: HttpRequest, slug: str, payload: KeyIn) -> Status[KeyCreated]:
    actor = actor_of(request)
    tenant = actor.tenant(slug, change=True)
    toolboxes = list(tenant.toolboxes.filter(name__in=payload.toolboxes))
    missing = sorted(set(payload.toolboxes) - {toolbox.name for toolbox in toolboxes})
    if missing:
        raise invalid(
            [{"field": "toolboxes", "message": f"No toolbox '{name}'."} for name in missing]
        )
    limits = payload.model_dump(include=set(key_limits.NAMES))
    may_limit(actor, limits, {})
    with transaction.atomic():
        key, full_key = ApiKey.issue(
            tenant,
            label=payload.label,
            toolboxes=toolboxes,
            expires_in_days=payload.expires_in_days,
            **limits,
        )
        record(actor, key, ADDITION)
    response = KeyCreated(**KeyOut.of(key).model_dump(), key=full_key)
    return Status(201, response)


@router.get(
    BASE + "/{prefix}",
    response={200: KeyOut, **ERRORS},
    summary="Get an API key",
    description=("By its prefix (the `<prefix>` of `wb_<prefix>_<secret>`); never the key itself."),
)
def get_key(request: HttpRequest, slug: str, prefix: str) -> KeyOut:
    return KeyOut.of(key_of(actor_of(request).tenant(slug), prefix))


@router.patch(
    BASE + "/{prefix}",
    response={200: KeyOut, **ERRORS},
    summary="Change an API key",
    description=(
        "Its label and its own rate limits (null: the installation's; a rate of 0: no "
        "limit). A field left out is kept. A tenant's admin may set a limit at most the "
        "installation's (403 above it, or for 0 while the installation limits keys); an "
        "operator may set any. Running gateways apply it at the key's next call."
    ),
)
def change_key(request: HttpRequest, slug: str, prefix: str, payload: KeyPatch) -> KeyOut:
    actor = actor_of(request)
    key = key_of(actor.tenant(slug, change=True), prefix)
    given = payload.model_dump(exclude_unset=True)
    if given.get("label") is None:
        given.pop("label", None)
    may_limit(actor, given, {name: getattr(key, name) for name in key_limits.NAMES})
    for name, value in given.items():
        setattr(key, name, value)
    key.full_clean()
    key.save()
    record(actor, key, CHANGE, fields=list(given))
    return KeyOut.of(key)


@router.post(
    BASE + "/{prefix}/revoke",
    response={200: KeyOut, **ERRORS},
    summary="Revoke an API key",
    description=(
        "/mcp refuses it from now on (`revoked_api_key`), on every replica. Revoking a "
        "revoked key changes nothing."
    ),
)
def revoke_key(request: HttpRequest, slug: str, prefix: str) -> KeyOut:
    actor = actor_of(request)
    key = key_of(actor.tenant(slug, change=True), prefix)
    if key.revoked_at is None:
        key.revoke()
        record(actor, key, CHANGE, "Revoked")
    return KeyOut.of(key)
