"""A toolbox's servers (raw or from the catalog; secrets write-only) and their tool
filters. A stored secret is kept (a null value, a map left out) only while the server stays
where it was (`toolboxes.destinations`): moved, each value kept is a 422 to type it again."""

from __future__ import annotations

from typing import Any

from django.db.models import Max
from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Status

from api.actor import Actor, one
from api.history import ADDITION, CHANGE, DELETION, record
from api.pages import Page, PageQuery, page
from api.problems import Problem, invalid
from api.routes.tenants import ERRORS, actor_of
from api.routes.toolboxes import BASE as TOOLBOXES
from api.routes.toolboxes import toolbox_of
from api.schemas import ServerFields, ServerIn, ServerOut, ServerPatch, ToolFiltersIn
from toolboxes.destinations import destination_of, moved, type_again
from toolboxes.models import CatalogEntry, Server, Toolbox, Transport
from toolboxes.server_fields import names

router = Router(tags=["servers"])
BASE = TOOLBOXES + "/{name}/servers"
# A raw server's maps of secret values (env, headers), each a map of its own here.
SECRET_MAPS = names("api", lambda field: field.raw and field.secret and not field.hidden)
# How a raw server runs: set by operators only (tenant admins make servers from the
# catalog, and never see these fields: toolboxes.admin.server_layout).
RAW_FIELDS = names("api", lambda field: field.raw)
CATALOG_REQUIRED = "This field is required."
NULLABLE = ("idle_timeout",)  # null: the gateway's default


def may_set(actor: Actor, server: Server, given: dict[str, Any]) -> None:
    """A tenant admin's server is made from the catalog: 403 for what only operators set."""
    if actor.operator:
        return
    raw = [field for field in RAW_FIELDS if field in given]
    if raw:
        raise Problem(
            403,
            f"Only operators may set {', '.join(raw)}: tenant admins make servers from the "
            "catalog.",
        )
    if server.pk is None and not given.get("catalog"):
        raise invalid([{"field": "catalog", "message": CATALOG_REQUIRED}])
    if server.pk is not None and server.catalog_entry_id is None and "catalog" in given:
        raise Problem(
            403, f"Server '{server.name}' is a raw server: only operators may change how it runs."
        )


def server_of(toolbox: Toolbox, server_name: str) -> Server:
    rows = toolbox.servers.select_related("catalog_entry").filter(name=server_name)
    return one(rows, "server", server_name)


def kept(given: dict[str, str | None], stored: dict[str, str], field: str) -> dict[str, str]:
    """A secret map as given, a null value meaning "keep the stored one"."""
    missing = [name for name, value in given.items() if value is None and name not in stored]
    if missing:
        raise invalid(
            [
                {"field": f"{field}.{name}", "message": "has no stored value to keep"}
                for name in missing
            ]
        )
    return {name: stored[name] if value is None else value for name, value in given.items()}


def apply(actor: Actor, server: Server, payload: ServerFields) -> list[str]:
    """Set what the payload gives; the names of the fields it gave."""
    given: dict[str, Any] = payload.model_dump(exclude_unset=True)
    given.pop("name", None)
    may_set(actor, server, given)
    before = destination_of(server) if server.pk is not None else None
    stored_secret_parameters = set(server.secret_parameters or {})
    asked: list[str] = []  # secret values kept because asked for (null)
    if "catalog" in given:
        entry_name = given.pop("catalog")
        server.catalog_entry = None
        if entry_name is not None:
            server.catalog_entry = CatalogEntry.objects.filter(name=entry_name).first()
            if server.catalog_entry is None:
                raise invalid(
                    [{"field": "catalog", "message": f"No catalog entry '{entry_name}'."}]
                )
        given["catalog_entry"] = entry_name
    for field in SECRET_MAPS:
        if field in given:
            values = given[field] or {}
            asked += [f"{field}.{name}" for name, value in values.items() if value is None]
            setattr(server, field, kept(values, getattr(server, field) or {}, field))
    if "parameters" in given:
        values = given["parameters"] or {}
        asked += [
            f"parameters.{name}"
            for name, value in values.items()
            if value is None and name in stored_secret_parameters
        ]
        stored = {**(server.parameters or {}), **(server.secret_parameters or {})}
        server.parameters = kept(values, stored, "parameters")
        server.secret_parameters = {}  # type: ignore[assignment]  # the model files the secret ones again (clean)
    if given.get("auth") is not None:
        asked += set_auth(server, given["auth"])
    for field, value in given.items():
        if field in (*SECRET_MAPS, "parameters", "catalog_entry", "auth"):
            continue
        if value is not None or field in NULLABLE:
            setattr(server, field, value)
    if server.catalog_entry_id is None:  # a raw server has no parameters
        server.parameters, server.secret_parameters = {}, {}  # type: ignore[assignment]
    refuse_moved_secrets(server, before, [*asked, *left_kept(server, given)])
    return list(given)


def set_auth(server: Server, auth: dict[str, Any]) -> list[str]:
    """The sign-in given, whole; a client secret left out or null keeps the stored one.
    Returns the secret kept, if one was."""
    secret = auth.get("client_secret")
    stored = server.oauth_client_values().get("client_secret", "")
    client = {"client_id": auth.get("client_id", ""), "client_secret": secret or ""}
    if secret is None:
        client["client_secret"] = stored
    server.auth = auth["mode"]
    server.oauth_client = {name: value for name, value in client.items() if value}  # type: ignore[assignment]
    server.oauth_scopes = auth.get("scopes", "")
    return ["auth.client_secret"] if secret is None and stored else []


def left_kept(server: Server, given: dict[str, Any]) -> list[str]:
    """The stored secret values a change leaves as they are because it does not name them,
    among those the server uses as it now is (others are the model's errors)."""
    if server.catalog_entry_id is not None:
        if "parameters" in given:
            return []
        return [f"parameters.{name}" for name in sorted(server.secret_parameters or {})]
    field = "env" if server.transport == Transport.STDIO else "headers"
    found = [] if field in given else [f"{field}.{name}" for name in getattr(server, field) or {}]
    if "auth" not in given and server.oauth_client_values().get("client_secret"):
        found.append("auth.client_secret")
    return found


def refuse_moved_secrets(server: Server, before: Any, kept_values: list[str]) -> None:
    """422 for each secret value kept for a server the change moves elsewhere."""
    what = moved(before, destination_of(server)) if kept_values else ""
    if what:
        raise invalid([{"field": path, "message": type_again(what)} for path in kept_values])


@router.get(
    BASE,
    response={200: Page[ServerOut], **ERRORS},
    summary="List a toolbox's servers",
    description=(
        "In the toolbox's order (the order `open_toolbox` lists their tools in), a page at "
        "a time. Secret values are never answered, only their names; how a raw server runs "
        "(command, arguments, URL, ...) is shown to operators only."
    ),
)
def list_servers(
    request: HttpRequest, slug: str, name: str, paging: Query[PageQuery]
) -> Page[ServerOut]:
    actor = actor_of(request)
    toolbox = toolbox_of(actor.tenant(slug), name)
    servers = toolbox.servers.select_related("catalog_entry", "toolbox")
    return page(
        servers, ("position", "pk"), paging, lambda server: ServerOut.of(server, actor.operator)
    )


@router.post(
    BASE,
    response={201: ServerOut, **ERRORS},
    summary="Add a server",
    description=(
        "At the end of the toolbox. Tenant admins make servers from the catalog "
        "(`catalog` and its `parameters`); only operators set how a raw server runs "
        "(403 otherwise)."
    ),
)
def create_server(
    request: HttpRequest, slug: str, name: str, payload: ServerIn
) -> Status[ServerOut]:
    actor = actor_of(request)
    toolbox = toolbox_of(actor.tenant(slug, change=True), name)
    last = toolbox.servers.aggregate(last=Max("position"))["last"]
    server = Server(toolbox=toolbox, name=payload.name, position=0 if last is None else last + 1)
    apply(actor, server, payload)
    server.full_clean()
    server.save()
    record(actor, server, ADDITION)
    return Status(201, ServerOut.of(server, actor.operator))


@router.get(
    BASE + "/{server}",
    response={200: ServerOut, **ERRORS},
    summary="Get a server",
    description=("As listed: secret values left out, how a raw server runs for operators only."),
)
def get_server(request: HttpRequest, slug: str, name: str, server: str) -> ServerOut:
    actor = actor_of(request)
    found = server_of(toolbox_of(actor.tenant(slug), name), server)
    return ServerOut.of(found, actor.operator)


@router.patch(
    BASE + "/{server}",
    response={200: ServerOut, **ERRORS},
    summary="Change a server",
    description=(
        "Only the fields given. A null secret value (env, headers, a secret parameter) "
        "keeps the stored one."
    ),
)
def change_server(
    request: HttpRequest, slug: str, name: str, server: str, payload: ServerPatch
) -> ServerOut:
    actor = actor_of(request)
    found = server_of(toolbox_of(actor.tenant(slug, change=True), name), server)
    fields = apply(actor, found, payload)
    if payload.name is not None:
        found.name = payload.name
        fields.append("name")
    found.full_clean()
    found.save()
    record(actor, found, CHANGE, fields=fields)
    return ServerOut.of(found, actor.operator)


@router.put(
    BASE + "/{server}/tool-filters",
    response={200: ServerOut, **ERRORS},
    summary="Set a server's tool filters",
    description=(
        'Which of its tools the toolbox exposes: ["*"] all, a list of names, [] none. A '
        "tool filtered out is not listed by `open_toolbox`, and `use_tool` answers "
        "TOOL_NOT_FOUND for it (the call log records it as `filtered`)."
    ),
)
def set_tool_filters(
    request: HttpRequest, slug: str, name: str, server: str, payload: ToolFiltersIn
) -> ServerOut:
    actor = actor_of(request)
    found = server_of(toolbox_of(actor.tenant(slug, change=True), name), server)
    found.tool_filters = payload.tool_filters
    found.full_clean()
    found.save()
    record(actor, found, CHANGE, fields=["tool_filters"])
    return ServerOut.of(found, actor.operator)


@router.delete(
    BASE + "/{server}",
    response={204: None, **ERRORS},
    summary="Delete a server",
    description=("Clients that opened its toolbox stop seeing its tools at their next request."),
)
def delete_server(request: HttpRequest, slug: str, name: str, server: str) -> HttpResponse:
    actor = actor_of(request)
    found = server_of(toolbox_of(actor.tenant(slug, change=True), name), server)
    record(actor, found, DELETION)
    found.delete()
    return HttpResponse(status=204)
