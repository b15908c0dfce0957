"""One description of a server's fields: for each field of the model (`Server`), where it
goes in the admin's form, under which key the configuration file and the API carry it, who
may set and see it, whether its values are secret, and whether the gateway's snapshot or
a desktop file carries it.

The admin's groups of fields, the configuration file's keys (and its import's error
paths), the API's operator-only rules and the fields the gateway reads are derived from
this table; `tests/toolboxes/test_server_fields.py` checks that the model and every
consumer agree with it. A new field of a server is one entry here (and the model's field,
its migration); the consumers it names then carry it, or their tests say what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SAME = "="  # a name in the file or the API: the model's own
# The admin form's groups (`toolboxes.admin.server_layout`), each derived from the table
# but three laid out by hand: "head" and "record" are the server page's own (its toolbox
# above, its dates below), "status" is beside the last check's status.
SECTIONS = (
    "head",
    "status",
    "first",
    "catalog",
    "own",
    "command",
    "remote",
    "sign_in",
    "sandbox",
    "tools",
    "record",
)


@dataclass(frozen=True, slots=True)
class ServerField:
    """One model field of a server, as each of its descriptions sees it."""

    name: str  # the model's field
    section: str | None  # the admin form's group (SECTIONS); None: not a field of the form
    form: str = SAME  # the admin form's field that edits it
    beside: bool = False  # in the admin form, on the line of the field before it
    file: str | None = SAME  # its key in the configuration file ("limits.memoryMb": nested)
    api: str | None = SAME  # its name in the API's server input (ServerIn); None: not set there
    answer: str | None = SAME  # its name in the API's answer (ServerOut); SAME: as `api`
    raw: bool = False  # how a raw server runs: only operators set it (tenants use the catalog)
    hidden: bool = False  # only operators see it (the API's answer, the config document)
    secret: bool = False  # its values are write-only: answered by name only
    from_entry: bool = False  # a catalog-made server takes it from its entry (left empty)
    # What of the gateway's snapshot carries it: ServerConfig's attributes, or "launch" (a
    # catalog-made server's entry and values, through `toolboxes.launch`), "order" and
    # "presence" (its place and being in ToolboxConfig.servers), "toolbox"; (): not read.
    snapshot: tuple[str, ...] = ()
    # The desktop form (`export_desktop`): True carries it, False leaves it out with a note
    # when set; None: not a question of the desktop form (resolved, or a gateway's matter).
    desktop: bool | None = None

    def __post_init__(self) -> None:
        for attribute in ("form", "file", "api"):
            if getattr(self, attribute) == SAME:
                object.__setattr__(self, attribute, self.name)
        if self.answer == SAME:
            object.__setattr__(self, "answer", self.api)

    @property
    def file_key(self) -> str | None:
        """Its top-level key in a server of the configuration file."""
        return self.file.split(".")[0] if self.file else None


F = ServerField
_SANDBOX: dict[str, Any] = {
    "section": "sandbox",
    "raw": True,
    "hidden": True,
    "api": None,
    "desktop": False,
}
_LIMIT: dict[str, Any] = {**_SANDBOX, "snapshot": ("sandbox",)}
_STATUS: dict[str, Any] = {
    "section": None,
    "file": None,
    "api": None,
}  # the last check's (check_status)

# In the model's order, a raw server's sign-in and sandbox after its own way of running.
SERVER_FIELDS: tuple[ServerField, ...] = (
    F("id", None, file=None, api=None, answer=None, snapshot=("server_id",)),
    F("toolbox", "head", file=None, api=None, answer="toolbox", snapshot=("toolbox",)),
    F("name", "first", file=None, snapshot=("name",)),  # the file's key of the server
    F(
        "position",
        "first",
        beside=True,
        file=None,
        api=None,
        answer="position",
        snapshot=("order",),
    ),
    F("transport", "own", file="type", raw=True, snapshot=("transport",), desktop=True),
    F(
        "command",
        "command",
        raw=True,
        from_entry=True,
        hidden=True,
        snapshot=("command",),
        desktop=True,
    ),
    F("args", "command", raw=True, from_entry=True, hidden=True, snapshot=("args",), desktop=True),
    F(
        "env",
        "command",
        answer="env_names",
        raw=True,
        from_entry=True,
        secret=True,
        snapshot=("env",),
        desktop=True,
    ),
    F("cwd", "sandbox", raw=True, from_entry=True, hidden=True, snapshot=("cwd",), desktop=False),
    F("url", "remote", raw=True, from_entry=True, hidden=True, snapshot=("url",), desktop=True),
    F(
        "headers",
        "remote",
        answer="header_names",
        raw=True,
        from_entry=True,
        secret=True,
        snapshot=("headers",),
        desktop=True,
    ),
    F("auth", "sign_in", file="auth.mode", raw=True, hidden=True, snapshot=("auth",)),
    F(
        "oauth_client",
        "sign_in",
        file=None,  # the file's auth.clientId and auth.clientSecret (`export_auth`)
        api="auth",
        raw=True,
        hidden=True,
        secret=True,
        snapshot=("oauth_client_id", "oauth_client_secret"),
    ),
    F(
        "oauth_scopes",
        "sign_in",
        file="auth.scopes",
        api="auth",
        raw=True,
        hidden=True,
        snapshot=("oauth_scopes",),
    ),
    F("mounts", **_SANDBOX, from_entry=True, snapshot=("sandbox",)),
    F("network", **_SANDBOX, beside=True, snapshot=("sandbox",)),
    F("egress_allow", **_SANDBOX, file="egressAllow", from_entry=True, snapshot=("sandbox",)),
    F(
        "host_ports",
        **_SANDBOX,
        file="hostPorts",
        beside=True,
        from_entry=True,
        snapshot=("sandbox",),
    ),
    F("memory_limit_mb", **_LIMIT, file="limits.memoryMb"),
    F("process_limit", **_LIMIT, file="limits.processes", beside=True),
    F("cpu_limit_seconds", **_LIMIT, file="limits.cpuSeconds", beside=True),
    F("open_files_limit", **_LIMIT, file="limits.openFiles", beside=True),
    F("tool_filters", "tools", file="toolFilters", snapshot=("tool_filters",), desktop=False),
    F("timeout", "tools", snapshot=("timeout",), desktop=False),
    F(
        "idle_timeout",
        "tools",
        file="idleTimeout",
        beside=True,
        snapshot=("idle_timeout",),
        desktop=False,
    ),
    F("catalog_entry", "catalog", file="catalog", api="catalog", snapshot=("launch",)),
    F("parameters", "catalog", form="parameter_values", snapshot=("launch",)),
    F(
        "secret_parameters",
        "catalog",
        form="parameter_values",
        file="parameters",
        api="parameters",
        answer="secret_parameter_names",
        secret=True,
        snapshot=("launch", "secrets"),
    ),
    F("pinning", "tools", snapshot=("pins",)),
    F("enabled", "status", snapshot=("presence",)),
    F("last_check_ok", **_STATUS, answer="last_check_ok"),
    F("last_check_at", **_STATUS, answer="last_check_at"),
    F("last_check_ms", **_STATUS, answer=None),
    F("last_check_reason", **_STATUS, answer="last_check_reason"),
    F("last_check_incident", **_STATUS, answer="last_check_incident"),
    F("last_check_cause", **_STATUS, answer="last_check_cause", hidden=True),
    F("last_check_tools", **_STATUS, answer=None),
    F("created_at", "record", file=None, api=None, answer=None),
    F("updated_at", "record", file=None, api=None, answer=None),
)
BY_NAME = {field.name: field for field in SERVER_FIELDS}


def names(
    attribute: str, where: Callable[[ServerField], Any] = lambda field: True
) -> tuple[str, ...]:
    """An attribute's values (a name in one description) of the fields `where` picks, in
    the table's order, each once, those a description lacks (None) left out."""
    values = (getattr(field, attribute) for field in SERVER_FIELDS if where(field))
    return tuple(dict.fromkeys(value for value in values if value is not None))


def section_rows(section: str) -> list[Any]:
    """An admin group's fields, a tuple for the fields on one line."""
    rows: list[list[str]] = []
    for field in SERVER_FIELDS:
        if field.section != section or any(field.form in row for row in rows):
            continue
        if field.beside and rows:
            rows[-1].append(field.form)
        else:
            rows.append([field.form])
    return [row[0] if len(row) == 1 else tuple(row) for row in rows]


# The configuration file: a model error's key in the file (the import names it by its JSON
# path), and the sandbox limits under "limits".
FILE_KEYS = {
    field.name: field.file
    for field in SERVER_FIELDS
    if field.file is not None and field.file != field.name
}
LIMITS = "limits."
LIMIT_KEYS = {
    field.name: field.file.removeprefix(LIMITS)
    for field in SERVER_FIELDS
    if field.file is not None and field.file.startswith(LIMITS)
}
# The fields the gateway's snapshot reads (`mcp_gateway.database.reads`).
# What a catalog-made server takes from its entry, and so must leave empty itself.
ENTRY_ONLY_FIELDS = names("name", lambda field: field.from_entry)
# The secret maps the admin's raw form edits (a catalog server's secrets are its parameters).
SECRET_FORM_FIELDS = names("form", lambda field: field.secret and field.form == field.name)
SNAPSHOT_READS = tuple(field.name for field in SERVER_FIELDS if field.snapshot)
