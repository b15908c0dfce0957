"""Catalog entries saved (all or none, each problem named by its JSON path), the catalog's
own JSON (`export_catalog`, which `import_catalog` also reads), and the shipped entries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from toolboxes.catalog.server_json import EntrySpec, RegistryError, entry_from_server_json
from toolboxes.launch import SANDBOX_FIELDS
from toolboxes.models import AuthMode, CatalogEntry, CatalogParameter

ENTRY_FIELDS: tuple[str, ...] = ("title", "description", "transport", "command", "args", "env")
ENTRY_FIELDS += ("cwd", "url", "headers", *SANDBOX_FIELDS)
# An entry's sign-in (toolboxes.models.sign_in), written only when it has one.
SIGN_IN_FIELDS = ("auth", "oauth_client", "oauth_scopes")


def export_entry(entry: CatalogEntry) -> dict[str, Any]:
    data: dict[str, Any] = {name: getattr(entry, name) for name in ENTRY_FIELDS}
    data["env"], data["headers"] = (
        dict(sorted(entry.env.items())),
        dict(sorted(entry.headers.items())),
    )
    if entry.auth != AuthMode.NONE:
        data["auth"] = str(entry.auth)
        data["oauth_client"] = dict(sorted(entry.oauth_client_values().items()))
        data["oauth_scopes"] = entry.oauth_scopes
    data["parameters"] = [
        {
            "name": parameter.name,
            "description": parameter.description,
            "required": parameter.required,
            "default": parameter.default,
            "choices": list(parameter.choices),
            "secret": parameter.secret,
        }
        for parameter in entry.parameters.all()
    ]
    return data


def export_catalog() -> dict[str, Any]:
    entries = CatalogEntry.objects.prefetch_related("parameters").order_by("name")
    return {"catalog": {entry.name: export_entry(entry) for entry in entries}}


def entries_from_export(data: dict[str, Any]) -> list[EntrySpec]:
    catalog = data.get("catalog")
    if not isinstance(catalog, dict):
        raise RegistryError("catalog: must be an object of entry names to entries")
    specs = []
    for name, entry in catalog.items():
        if not isinstance(entry, dict):
            raise RegistryError(f"catalog.{name}: must be an object")
        unknown = set(entry) - {*ENTRY_FIELDS, *SIGN_IN_FIELDS, "parameters"}
        if unknown:
            raise RegistryError(f"catalog.{name}.{sorted(unknown)[0]}: is not a known field")
        parameters = entry.get("parameters", [])
        if not isinstance(parameters, list) or not all(isinstance(p, dict) for p in parameters):
            raise RegistryError(f"catalog.{name}.parameters: must be a list of objects")
        fields = {key: value for key, value in entry.items() if key != "parameters"}
        specs.append(EntrySpec(name, fields, [dict(p) for p in parameters]))
    return specs


def entries_from_document(data: Any) -> list[EntrySpec]:
    """A server.json document, or the catalog's own export (`{"catalog": ...}`)."""
    if isinstance(data, dict) and "catalog" in data and "name" not in data:
        return entries_from_export(data)
    return [entry_from_server_json(data)]


def _save(instance: CatalogEntry | CatalogParameter, where: str) -> None:
    try:
        instance.full_clean(exclude=["entry"] if isinstance(instance, CatalogParameter) else None)
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        place = where if field == "__all__" else f"{where}.{field}"
        raise RegistryError(f"{place}: {messages[0]}") from None
    instance.save()


def save_entry(spec: EntrySpec, *, update: bool = True) -> CatalogEntry | None:
    """Create the entry, or update it (its parameters become exactly the spec's). Raises
    RegistryError naming the field; None when it exists and `update` is off."""
    entry = CatalogEntry.objects.filter(name=spec.name).first()
    if entry is not None and not update:
        return None
    entry = entry or CatalogEntry(name=spec.name)
    defaults = CatalogEntry()
    for name in (*ENTRY_FIELDS, *SIGN_IN_FIELDS):
        setattr(entry, name, spec.fields.get(name, getattr(defaults, name)))
    _save(entry, spec.name)
    kept = []
    for position, fields in enumerate(spec.parameters):
        parameter = entry.parameters.filter(name=fields.get("name")).first()
        parameter = parameter or CatalogParameter(entry=entry)
        for key, value in fields.items():
            if key not in ("name", "description", "required", "default", "choices", "secret"):
                raise RegistryError(f"{spec.name}.parameters[{position}].{key}: is not known")
            setattr(parameter, key, value)
        parameter.position = position
        _save(parameter, f"{spec.name}.parameters[{position}]")
        kept.append(parameter.pk)
    entry.parameters.exclude(pk__in=kept).delete()
    missing = entry.undeclared({p["name"] for p in spec.parameters})
    if missing:
        raise RegistryError(f"{spec.name}: placeholders without a parameter: {', '.join(missing)}")
    return entry


def import_entries(specs: list[EntrySpec], *, update: bool = True) -> list[CatalogEntry]:
    """All or none."""
    with transaction.atomic():
        return [entry for spec in specs if (entry := save_entry(spec, update=update))]


DEFAULT_CATALOG = Path(__file__).parent.parent / "data" / "default_catalog.json"


def load_default_catalog() -> list[CatalogEntry]:
    """The shipped entries (server.json documents) that are not in the catalog yet; an
    entry the operator already has, edited or not, is left as it is."""
    documents = json.loads(DEFAULT_CATALOG.read_text(encoding="utf-8"))
    return import_entries(
        [entry_from_server_json(document) for document in documents], update=False
    )
