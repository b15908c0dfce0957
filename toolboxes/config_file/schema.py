"""The JSON file's shape: pydantic models of a tenant's toolboxes and servers, and JSON in
and out (duplicate keys refused; every problem named by its JSON path)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticError

DEFAULT_TIMEOUT = 60


class ConfigError(ValueError):
    """A configuration file that cannot be imported; the message names path and field."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class ServerSpec(_Spec):
    tool_filters: list[str] = Field(default_factory=lambda: ["*"], alias="toolFilters")
    timeout: int = Field(default=DEFAULT_TIMEOUT, ge=1)
    idle_timeout: int | None = Field(default=None, ge=1, alias="idleTimeout")
    pinning: Literal["trust-first", "approve-all", "off"] = "trust-first"
    enabled: bool = True


class MountSpec(_Spec):
    path: str
    writable: bool = False


class LimitsSpec(_Spec):
    """Sandbox limits; a missing one is the gateway's WORKBENCH_SANDBOX_* default."""

    memory_mb: int | None = Field(default=None, ge=1, alias="memoryMb")
    processes: int | None = Field(default=None, ge=1)
    cpu_seconds: int | None = Field(default=None, ge=1, alias="cpuSeconds")
    open_files: int | None = Field(default=None, ge=1, alias="openFiles")


# A limits key in the JSON -> its attribute here (the server's field: `server_fields`).
LIMIT_ATTRS = {
    "memoryMb": "memory_mb",
    "processes": "processes",
    "cpuSeconds": "cpu_seconds",
    "openFiles": "open_files",
}


class StdioServerSpec(ServerSpec):
    type: Literal["stdio"] | None = None
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str = ""
    mounts: list[MountSpec] = Field(default_factory=list)
    network: bool = True
    egress_allow: list[str] = Field(default_factory=list, alias="egressAllow")
    host_ports: list[str] = Field(default_factory=list, alias="hostPorts")
    limits: LimitsSpec = Field(default_factory=LimitsSpec)


class CatalogServerSpec(ServerSpec):
    """A server made from a catalog entry: the entry's name and its parameter values."""

    catalog: str
    parameters: dict[str, str] = Field(default_factory=dict)


class RemoteServerSpec(ServerSpec):
    type: Literal["streamable-http", "sse"]
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    auth: AuthSpec | None = None


class AuthSpec(_Spec):
    """A remote server's OAuth sign-in (`"auth"`; static headers need none)."""

    mode: Literal["oauth_person", "oauth_shared", "client_credentials"]
    client_id: str = Field(default="", alias="clientId")
    client_secret: str = Field(default="", alias="clientSecret")
    scopes: str = ""


# A toolbox's own endpoint (/mcp/t/<slug>/toolboxes/<name>): written only when off.
OFFERED_ALONE = "offeredAlone"


class ToolboxSpec(_Spec):
    description: str
    offered_alone: bool = Field(default=True, alias="offeredAlone")  # OFFERED_ALONE
    mcp_servers: dict[str, dict[str, Any]] = Field(default_factory=dict, alias="mcpServers")

    @field_validator("description")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


class TenantSpec(_Spec):
    toolboxes: dict[str, ToolboxSpec]
    policies: dict[str, Any] | None = None  # read by `config_file.policies`


# Where a desktop file keeps its servers, and who writes it so.
DESKTOP_KEYS = {
    "mcpServers": "Claude Desktop, Cursor, Windsurf, Gemini CLI",
    "servers": "VS Code",
}
EXPORT_KEY = "toolboxes"
# Desktop spellings of a remote server's URL (Windsurf, Gemini CLI): Streamable HTTP.
URL_ALIASES = ("serverUrl", "httpUrl")


def keys_found(data: dict[str, Any]) -> str:
    keys = [f'"{key}"' for key in list(data)[:5]]
    return "has " + ", ".join(keys) + (", ..." if len(data) > 5 else "") if keys else "is empty"


def desktop_keys() -> str:
    return " or ".join(f'"{key}" ({clients})' for key, clients in DESKTOP_KEYS.items())


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def loads(text: str) -> Any:
    """JSON with duplicate keys refused (a later key would silently win otherwise)."""

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise ConfigError(f"Invalid JSON: duplicate key '{key}'")
            seen[key] = value
        return seen

    try:
        return json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise ConfigError(f"Invalid JSON: {exc.msg} ({where})") from None


def json_path(*parts: str | int) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


_PYDANTIC_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "is not a known field",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
    "greater_than_equal": "must be at least 1",
}


def config_error(exc: PydanticError, *prefix: str | int) -> ConfigError:
    error = exc.errors(include_url=False)[0]
    kind = error["type"]
    if kind == "literal_error":
        message = f"must be one of {error['ctx']['expected']}"
    elif kind == "value_error":
        message = str(error["ctx"]["error"])
    else:
        message = _PYDANTIC_MESSAGES.get(kind, error["msg"])
    return ConfigError(f"{json_path(*prefix, *error['loc']) or 'top level'}: {message}")
