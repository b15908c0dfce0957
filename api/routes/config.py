"""A tenant's whole configuration, declaratively: read it, apply it (all or nothing, as
`import_config --replace`), or ask what applying it would do (`?dry_run=true`).

The answer's `ETag` is the configuration's version; a `PUT` with `If-Match` of another
version is refused (409) and changes nothing.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import HttpRequest, JsonResponse
from ninja import Body, Header, Router, Schema
from pydantic import Field

from api import config_document
from api.actor import Actor
from api.history import ADDITION, CHANGE, DELETION, record
from api.problems import Problem, ProblemOut, invalid
from api.routes.tenants import ERRORS, actor_of
from toolboxes.config_file import ConfigError, loads
from toolboxes.config_file.plan import POLICIES
from toolboxes.models import Tenant

router = Router(tags=["configuration"])
PATH = "/tenants/{slug}/config"
RAW_REFUSED = (
    "Only operators may make a raw server or change how one runs: {servers}. Tenant admins "
    "make servers from the catalog."
)
STALE = (
    "The configuration changed since version {given} was read (now {current}): read it "
    "again, then apply your change to it."
)


class ChangedOut(Schema):
    name: str
    fields: list[str]


class PlanOut(Schema):
    applied: bool = Field(description="false for a dry run, or when nothing would change.")
    version: str = Field(description="The configuration's version after (its ETag).")
    created: list[str]
    changed: list[ChangedOut]
    deleted: list[str]


def _etag(value: str) -> str:
    return f'"{value}"'


def _version_in(if_match: str | None) -> str | None:
    if if_match is None or if_match.strip() == "*":
        return None
    return if_match.strip().removeprefix("W/").strip('"')


def record_plan(actor: Actor, tenant: Tenant, plan: config_document.Plan) -> None:
    """The tenant's history names the whole change; each toolbox and server made, changed
    or deleted has its own line (a deleted one as the admin's delete records it: its
    content type, id and repr)."""
    summary = "; ".join(
        f"{what} {', '.join(names)}"
        for what, names in (
            ("created", plan.created),
            ("changed", list(plan.changed)),
            ("deleted", plan.deleted),
        )
        if names
    )
    record(actor, tenant, CHANGE, f"Applied a configuration: {summary}")
    for name in [*plan.created, *plan.changed]:
        if name == POLICIES:
            continue  # the tenant's own line above names it
        toolbox_name, _, server_name = name.partition("/")
        toolbox = tenant.toolboxes.get(name=toolbox_name)
        target = toolbox.servers.get(name=server_name) if server_name else toolbox
        if name in plan.changed:
            record(actor, target, CHANGE, "Changed by a configuration:", plan.changed[name])
        else:
            record(actor, target, ADDITION, "Added by a configuration")
    for name in plan.deleted:
        record(actor, plan.gone[name], DELETION, "Deleted by a configuration")


def config_problem(exc: ConfigError) -> Problem:
    where, _, message = str(exc).partition(": ")
    if not message:
        where, message = "", str(exc)
    return invalid([{"field": where, "message": message}], "The configuration is not valid.")


@router.get(
    PATH,
    response={200: dict[str, Any], **ERRORS},
    summary="Get the configuration",
    description="The export format of `export_config`, secret values as null.",
)
def get_config(request: HttpRequest, slug: str) -> JsonResponse:
    actor = actor_of(request)
    tenant = actor.tenant(slug)
    document = config_document.export_tenant(tenant)
    answer = JsonResponse(config_document.redacted(tenant, document, operator=actor.operator))
    answer["ETag"] = _etag(config_document.version(document))
    return answer


@router.put(
    PATH,
    response={200: PlanOut, **ERRORS, 409: ProblemOut},
    summary="Apply a configuration",
    description="Apply a whole configuration (what it does not name is deleted). A null "
    "secret value keeps the stored one. `dry_run=true`: the plan, nothing applied.",
)
def put_config(
    request: HttpRequest,
    slug: str,
    document: Body[dict[str, Any]],
    dry_run: bool = False,
    if_match: str | None = Header(
        None, alias="If-Match", description="The version (ETag) the change was made on."
    ),
) -> JsonResponse:
    actor = actor_of(request)
    tenant = actor.tenant(slug, change=True)
    given = _version_in(if_match)
    try:
        loads(request.body.decode("utf-8", errors="replace"))  # duplicate keys refused
        with transaction.atomic():  # the change and its history, together
            plan, version = config_document.apply(
                tenant, document, if_match=given, dry_run=dry_run, operator=actor.operator
            )
            applied = not (dry_run or plan.empty)
            if applied:
                record_plan(actor, tenant, plan)
    except ConfigError as exc:
        raise config_problem(exc) from None
    except config_document.RawRefused as exc:
        raise Problem(403, RAW_REFUSED.format(servers=", ".join(exc.servers))) from None
    except config_document.StaleVersion as exc:
        raise Problem(409, STALE.format(given=given, current=exc.current)) from None
    body = PlanOut(
        applied=applied,
        version=version,
        created=plan.created,
        changed=[ChangedOut(name=name, fields=fields) for name, fields in plan.changed.items()],
        deleted=plan.deleted,
    )
    answer = JsonResponse(body.model_dump())
    answer["ETag"] = _etag(version)
    return answer
