"""The official MCP Registry's `server.json` (schema 2025-12-11) read into catalog entries,
and the catalog written back as JSON.

One entry per file, named from `name`. Of `packages` (alternative ways to run the same
server) the first stdio package of a supported type is used: npm runs as
`npx -y <identifier>@<version>`, pypi as `uvx <identifier>==<version>`, or, where `uvx` is
not on the gateway's PATH, as the gateway's own Python with `-m <identifier, '-' as '_'>`
(the package must then be installed in the gateway's environment). A file with no such
package uses its first streamable-http or SSE remote. Environment variables, package and
runtime arguments and remote headers become declared parameters; `{name}` in a value
becomes the `{{name}}` placeholder. Problems are reported with their JSON path.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from toolboxes.catalog import SANDBOX_FIELDS, undeclared
from toolboxes.models import CatalogEntry, CatalogParameter, Transport

SUPPORTED_PACKAGES = ("npm", "pypi")
REMOTE_TYPES = {"streamable-http": Transport.STREAMABLE_HTTP, "sse": Transport.SSE}
_VARIABLE = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_.-]*)\}(?!\})")
_ENTRY_FIELDS = ("title", "description", "transport", "command", "args", "env", "cwd", "url")
_ENTRY_FIELDS += ("headers", *SANDBOX_FIELDS)


class RegistryError(ValueError):
    """A file that cannot become a catalog entry; the message starts with the JSON path."""


@dataclass
class EntrySpec:
    """A catalog entry to create or update, with its parameters in order."""

    name: str
    fields: dict[str, Any]
    parameters: list[dict[str, Any]] = field(default_factory=list)

    def declare(self, name: str, spec: dict[str, Any], *, fixed: bool = False) -> str:
        """Declare a parameter from a registry Input (once per name); returns its name."""
        if any(parameter["name"] == name for parameter in self.parameters):
            return name
        choices = spec.get("choices") or []
        self.parameters.append(
            {
                "name": name,
                "description": str(spec.get("description") or "")[:500],
                "required": bool(spec.get("isRequired")) and not fixed,
                "default": str(spec.get("default") or ""),
                "choices": [str(choice) for choice in choices],
                "secret": bool(spec.get("isSecret")),
            }
        )
        return name


def _templated(spec: EntrySpec, value: str, variables: Any, where: str) -> str:
    """A fixed registry value, its `{var}` variables declared and made `{{var}}`."""
    variables = variables if isinstance(variables, dict) else {}
    for name in _VARIABLE.findall(value):
        declared = variables.get(name)
        spec.declare(name, declared if isinstance(declared, dict) else {"isRequired": True})
    return _VARIABLE.sub(r"{{\1}}", value)


def _input(spec: EntrySpec, item: Any, where: str) -> tuple[str | None, dict[str, Any]]:
    if not isinstance(item, dict):
        raise RegistryError(f"{where}: must be an object")
    return item.get("name") if isinstance(item.get("name"), str) else None, item


def _argument(spec: EntrySpec, item: Any, where: str) -> str:
    """A command-line argument: fixed (`value`) or a parameter (`{{name}}`)."""
    name, item = _input(spec, item, where)
    kind = item.get("type")
    value = item.get("value")
    if kind == "positional":
        if isinstance(value, str):
            return _templated(spec, value, item.get("variables"), where)
        hint = item.get("valueHint")
        if not isinstance(hint, str) or not hint:
            raise RegistryError(f"{where}: a positional argument needs a value or valueHint")
        return "{{" + spec.declare(hint, item) + "}}"
    if kind == "named":
        if not name:
            raise RegistryError(f"{where}.name: a named argument needs a name")
        if isinstance(value, str):
            return f"{name}={_templated(spec, value, item.get('variables'), where)}"
        parameter = spec.declare(name.lstrip("-") or name, item)
        return f"{name}={{{{{parameter}}}}}"
    raise RegistryError(f"{where}.type: must be 'positional' or 'named'")


def _key_values(spec: EntrySpec, items: Any, where: str) -> dict[str, str]:
    """Environment variables or headers: fixed values, or each a parameter of its name."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise RegistryError(f"{where}: must be a list")
    result = {}
    for index, item in enumerate(items):
        name, item = _input(spec, item, f"{where}[{index}]")
        if not name:
            raise RegistryError(f"{where}[{index}].name: is required")
        value = item.get("value")
        if isinstance(value, str):
            result[name] = _templated(spec, value, item.get("variables"), where)
        else:
            result[name] = "{{" + spec.declare(name, item) + "}}"
    return result


def _arguments(spec: EntrySpec, items: Any, where: str) -> list[str]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise RegistryError(f"{where}: must be a list")
    return [_argument(spec, item, f"{where}[{index}]") for index, item in enumerate(items)]


def python_launcher(identifier: str, version: str) -> tuple[str, list[str]]:
    """`uvx id==version`, or this environment's Python `-m module` where uvx is missing."""
    if shutil.which("uvx"):
        return "uvx", [f"{identifier}=={version}"]
    return sys.executable, ["-m", identifier.replace("-", "_")]


def _package(spec: EntrySpec, package: dict[str, Any], where: str) -> None:
    identifier, version = package.get("identifier"), package.get("version")
    if not isinstance(identifier, str) or not identifier:
        raise RegistryError(f"{where}.identifier: is required")
    if not isinstance(version, str) or not version:
        raise RegistryError(f"{where}.version: is required")
    runtime = _arguments(spec, package.get("runtimeArguments"), f"{where}.runtimeArguments")
    arguments = _arguments(spec, package.get("packageArguments"), f"{where}.packageArguments")
    env = _key_values(spec, package.get("environmentVariables"), f"{where}.environmentVariables")
    if package["registryType"] == "npm":
        command, args = "npx", ["-y", *runtime, f"{identifier}@{version}"]
    else:
        command, launch = python_launcher(identifier, version)
        args = [*runtime, *launch] if command == "uvx" else launch
    spec.fields.update(
        transport=Transport.STDIO, command=command, args=[*args, *arguments], env=env
    )


def _remote(spec: EntrySpec, remote: dict[str, Any], where: str) -> None:
    url = remote.get("url")
    if not isinstance(url, str) or not url:
        raise RegistryError(f"{where}.url: is required")
    spec.fields.update(
        transport=REMOTE_TYPES[remote["type"]],
        url=_templated(spec, url, remote.get("variables"), f"{where}.url"),
        headers=_key_values(spec, remote.get("headers"), f"{where}.headers"),
    )


def _list_of_objects(data: dict[str, Any], key: str) -> list[Any]:
    items = data.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        raise RegistryError(f"{key}: must be a list")
    return items


def entry_from_server_json(data: Any) -> EntrySpec:
    """One server.json document as an entry; RegistryError names the JSON path."""
    if not isinstance(data, dict):
        raise RegistryError("top level: must be an object")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise RegistryError("name: is required")
    spec = EntrySpec(
        name,
        {
            "title": str(data.get("title") or "")[:200],
            "description": str(data.get("description") or ""),
        },
    )
    packages = _list_of_objects(data, "packages")
    remotes = _list_of_objects(data, "remotes")
    for index, package in enumerate(packages):
        if (
            isinstance(package, dict)
            and package.get("registryType") in SUPPORTED_PACKAGES
            and (package.get("transport") or {}).get("type", "stdio") == "stdio"
        ):
            _package(spec, package, f"packages[{index}]")
            return spec
    for index, remote in enumerate(remotes):
        if isinstance(remote, dict) and remote.get("type") in REMOTE_TYPES:
            _remote(spec, remote, f"remotes[{index}]")
            return spec
    if packages:
        kinds = ", ".join(
            f"packages[{index}].registryType: '{package.get('registryType')}'"
            for index, package in enumerate(packages)
            if isinstance(package, dict)
        )
        raise RegistryError(
            f"{kinds or 'packages'}: no package can run here (supported: npm and pypi over "
            "stdio) and no streamable-http or sse remote"
        )
    raise RegistryError("packages: no package and no streamable-http or sse remote")


# The catalog's own JSON (export_catalog), which import_catalog also reads.


def export_entry(entry: CatalogEntry) -> dict[str, Any]:
    data: dict[str, Any] = {name: getattr(entry, name) for name in _ENTRY_FIELDS}
    data["env"], data["headers"] = (
        dict(sorted(entry.env.items())),
        dict(sorted(entry.headers.items())),
    )
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
        unknown = set(entry) - {*_ENTRY_FIELDS, "parameters"}
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
    for name in _ENTRY_FIELDS:
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
    missing = undeclared(entry, {p["name"] for p in spec.parameters})
    if missing:
        raise RegistryError(f"{spec.name}: placeholders without a parameter: {', '.join(missing)}")
    return entry


def import_entries(specs: list[EntrySpec], *, update: bool = True) -> list[CatalogEntry]:
    """All or none."""
    with transaction.atomic():
        return [entry for spec in specs if (entry := save_entry(spec, update=update))]


DEFAULT_CATALOG = Path(__file__).parent / "data" / "default_catalog.json"


def load_default_catalog() -> list[CatalogEntry]:
    """The shipped entries (server.json documents) that are not in the catalog yet; an
    entry the operator already has, edited or not, is left as it is."""
    documents = json.loads(DEFAULT_CATALOG.read_text(encoding="utf-8"))
    return import_entries(
        [entry_from_server_json(document) for document in documents], update=False
    )
