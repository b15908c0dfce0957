"""The official MCP Registry's `server.json` (schema 2025-12-11) read into catalog entries
(saved by `toolboxes.catalog.entries`).

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

import re
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

from toolboxes.models import Transport

SUPPORTED_PACKAGES = ("npm", "pypi")
REMOTE_TYPES = {"streamable-http": Transport.STREAMABLE_HTTP, "sse": Transport.SSE}
_VARIABLE = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_.-]*)\}(?!\})")


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
