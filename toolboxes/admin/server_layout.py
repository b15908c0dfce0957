"""The server form's layout, by role: its groups of fields and their help, said once per
group rather than under each field. Operators see everything; a tenant's members see a
server as a catalog entry and its parameter values."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from accounts.admin_scope import AdminMixin
from accounts.roles import is_operator
from kernel.masking import MASK
from toolboxes.models import Server

# What a tenant admin sees of a server: the catalog entry and its parameters, never the
# command, args, cwd, mounts or raw URL (operators see those too).
CATALOG_SERVER_FIELDS: list[Any] = ["catalog_entry", "parameter_values"]
LIMIT_FIELDS = ("memory_limit_mb", "process_limit", "cpu_limit_seconds", "open_files_limit")

# The form's help, said once per group of fields rather than under each one.
HELP_COMMAND = (
    "The program, one argument per line, its working directory and environment. "
    "Values are write-only and encrypted at rest: a stored one shows empty; leave it so "
    "to keep it, type a new one to replace it, tick remove to delete it."
)
HELP_REMOTE = "The server's http(s) URL and headers (values write-only, as for environment)."
HELP_TOOLS = (
    "Tick the tools this toolbox exposes (listed from the server's last check), or all "
    "tools, including future ones. Timeouts are in seconds; an empty idle timeout is the "
    "gateway's. Pinning holds new or changed tool definitions until an admin approves."
)
HELP_SANDBOX = (
    'Host paths the server may see, as JSON ([{"path": "/srv/data"}], "writable": true to '
    "write), its network (public addresses only, unless the allowance names more), and "
    "limits (empty: the gateway's WORKBENCH_SANDBOX_* defaults)."
)
HELP_CATALOG = (
    "A server made from a catalog entry runs what the entry says, with these parameter "
    "values. Secret values are never shown; left empty, a stored one is kept."
)


def server_fieldsets(operator: bool, status: str | None, head: list[Any]) -> list[Any]:
    """The server form grouped by what it is about; stdio and remote groups are shown by
    the transport chosen (toolboxes/static/toolboxes/server_form.js)."""
    tools = ["tool_filters", ("timeout", "idle_timeout", "pinning")]
    first = [*head, *([status] if status else [])]
    if not operator:
        return [
            (None, {"fields": [*first, ("name", "position", "enabled")]}),
            _group("Catalog entry", CATALOG_SERVER_FIELDS, HELP_CATALOG),
            _group("Tools", tools, HELP_TOOLS),
        ]
    command = [("command", "cwd"), "args", "env"]
    sandbox = [("mounts", "network"), "egress_allow", LIMIT_FIELDS]
    return [
        (None, {"fields": [*first, ("name", "position", "transport", "enabled")]}),
        _group("Command", command, HELP_COMMAND, "wb-stdio"),
        _group("Remote", ["url", "headers"], HELP_REMOTE, "wb-remote"),
        _group("Tools", tools, HELP_TOOLS),
        _group("Sandbox", sandbox, HELP_SANDBOX, "wb-stdio", "collapse"),
        _group("Catalog entry", CATALOG_SERVER_FIELDS, HELP_CATALOG, "collapse"),
    ]


def _group(title: str, fields: list[Any], help_text: str, *classes: str) -> tuple[str, Any]:
    return (title, {"classes": list(classes), "description": help_text, "fields": fields})


class ServerLayout(AdminMixin):
    """The server form's fieldsets, by role; mixed in after TenantScoped (which masks
    secrets on read-only forms) and before the admin class."""

    head: list[Any] = []
    tail: list[Any] = []

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        inline = isinstance(self, admin.options.InlineModelAdmin)
        may_check = obj is None or self.has_change_permission(request, obj)
        status: str | None = "check_status" if may_check else "check_status_plain"
        if obj is None and not inline:
            status = None  # an add form: nothing to check yet
        fieldsets = server_fieldsets(is_operator(request.user), status, self.head)
        if self.tail:
            fieldsets.append((None, {"fields": self.tail}))
        return fieldsets


@admin.display(description="parameters")
def parameter_values(obj: Server) -> str:
    """Read-only forms (viewers): plain values, and secret ones masked."""
    values = {**(obj.parameters or {}), **{name: MASK for name in obj.secret_parameters or {}}}
    return ", ".join(f"{name}={value}" for name, value in sorted(values.items())) or "—"
