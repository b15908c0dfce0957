"""The catalog: every member reads it (to make servers from its entries); operators add,
update and delete entries (a server.json document, or the catalog's own export, as
`import_catalog` reads them: all or nothing)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import ProtectedError
from django.http import HttpRequest, HttpResponse
from ninja import Body, Query, Router, Schema

from api.actor import one
from api.history import ADDITION, CHANGE, DELETION, record
from api.pages import Page, PageQuery, page
from api.problems import Problem, ProblemOut, invalid
from api.routes.tenants import ERRORS, actor_of
from toolboxes.catalog.entries import entries_from_document, import_entries
from toolboxes.catalog.server_json import RegistryError
from toolboxes.models import CatalogEntry

router = Router(tags=["catalog"])


class ParameterOut(Schema):
    name: str
    description: str
    required: bool
    default: str | None
    choices: list[str]
    secret: bool


class EntryOut(Schema):
    name: str
    title: str
    description: str
    transport: str
    parameters: list[ParameterOut]

    @staticmethod
    def of(entry: CatalogEntry) -> EntryOut:
        return EntryOut(
            name=entry.name,
            title=entry.title,
            description=entry.description,
            transport=entry.transport,
            parameters=[
                ParameterOut(
                    name=p.name,
                    description=p.description,
                    required=p.required,
                    default=None if p.secret else p.default,
                    choices=list(p.choices),
                    secret=p.secret,
                )
                for p in entry.parameters.all()
            ],
        )


class Saved(Schema):
    entries: list[EntryOut]


def entry_of(name: str) -> CatalogEntry:
    return one(CatalogEntry.objects.filter(name=name), "catalog entry", name)


@router.get(
    "/catalog",
    response={200: Page[EntryOut], **ERRORS},
    summary="List catalog entries",
    description=(
        "By name, a page at a time. Every member reads the catalog: tenant admins make "
        "servers from its entries."
    ),
)
def list_entries(request: HttpRequest, paging: Query[PageQuery]) -> Page[EntryOut]:
    actor_of(request)
    entries = CatalogEntry.objects.prefetch_related("parameters")
    return page(entries, ("name",), paging, EntryOut.of)


@router.get(
    "/catalog/{path:name}",
    response={200: EntryOut, **ERRORS},
    summary="Get a catalog entry",
    description="Its parameters, a secret one without its default.",
)
def get_entry(request: HttpRequest, name: str) -> EntryOut:
    actor_of(request)
    return EntryOut.of(entry_of(name))


@router.post("/catalog", response={200: Saved, **ERRORS}, summary="Add or update catalog entries")
def save_entries(request: HttpRequest, document: Body[dict[str, Any]]) -> Saved:
    """A server.json document, or `{"catalog": {name: entry}}`: entries created or updated."""
    actor = actor_of(request)
    actor.may_operate()
    existing = set(CatalogEntry.objects.values_list("name", flat=True))
    try:
        entries = import_entries(entries_from_document(document))
    except RegistryError as exc:
        where, _, message = str(exc).partition(": ")
        raise invalid([{"field": where, "message": message or where}]) from None
    for entry in entries:
        record(actor, entry, CHANGE if entry.name in existing else ADDITION)
    return Saved(entries=[EntryOut.of(entry) for entry in entries])


@router.delete(
    "/catalog/{path:name}",
    response={204: None, **ERRORS, 409: ProblemOut},
    summary="Delete a catalog entry",
    description="Operators only. 409 while servers are made from it.",
)
def delete_entry(request: HttpRequest, name: str) -> HttpResponse:
    actor = actor_of(request)
    actor.may_operate()
    entry = entry_of(name)
    try:
        with transaction.atomic():
            record(actor, entry, DELETION)
            entry.delete()
    except ProtectedError:
        raise Problem(
            409, f"Servers are made from catalog entry '{name}': delete them first."
        ) from None
    return HttpResponse(status=204)
