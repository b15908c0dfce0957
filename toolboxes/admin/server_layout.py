"""The server form's layout, by role: its groups of fields and their help, said once per
group rather than under each field. Operators see everything; a tenant's members see a
server as a catalog entry and its parameter values."""

from __future__ import annotations

import copy
import shlex
from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from kernel.admin_kit.scoping import AdminMixin
from kernel.masking import MASK
from kernel.roles import is_operator
from toolboxes.launch import launch_of
from toolboxes.models import Server
from toolboxes.server_fields import section_rows as rows

# The form's help, said once per group of fields rather than under each one.
HELP_COMMAND = (
    "The program, one argument per line, and its environment. "
    "Values are write-only and encrypted at rest: a stored one shows empty; leave it so "
    "to keep it, type a new one to replace it, tick remove to delete it."
)
HELP_REMOTE = "The server's http(s) URL and headers (values write-only, as for environment)."
HELP_SIGN_IN = (
    "How the gateway signs in to a remote server: static headers, or OAuth, where each person "
    "connects their own account (or a tenant admin one shared account) from Connected "
    "accounts or the link a client gets. An OAuth client (client_id, client_secret) is only "
    "for servers that offer neither client metadata documents nor registration."
)
HELP_TOOLS = (
    "Tick the tools this toolbox exposes (listed from the server's last check), or all "
    "tools, including future ones. Timeouts are in seconds; an empty idle timeout is the "
    "gateway's. Pinning holds new or changed tool definitions until an admin approves."
)
HELP_SANDBOX = (
    "Its working directory; host paths the server may see, as JSON "
    '([{"path": "/srv/data"}], "writable": true to write), its network (public addresses '
    "only, unless the allowance names more; this host's own services only at the host ports "
    "named), and limits (empty: the gateway's WORKBENCH_SANDBOX_* defaults)."
)
HELP_CATALOG = (
    "A server made from a catalog entry runs what the entry says, with these parameter "
    "values. Secret values are never shown; left empty, a stored one is kept."
)
HELP_CATALOG_OPERATOR = (
    "Pick an entry: its parameters appear below, and the entry gives the command or URL. "
    "Or leave it empty and give a server of your own below."
)
HELP_OWN = "Leave the catalog entry empty: the transport, then a command or a URL."


def server_fieldsets(
    operator: bool, status: str | None, head: list[Any], *, inline: bool = False
) -> list[Any]:
    """The server form grouped by what it is about, a catalog entry first. For operators a
    server of their own is the second way: its groups are shown while no entry is chosen,
    stdio and remote ones by the transport (toolboxes/static/toolboxes/server_form.js,
    server_source.js). In a toolbox's inline each group's help is left to the server's own
    page, so that a toolbox of several servers stays short. Each group's fields are
    `server_fields`' (a tenant admin's: never how a raw server runs); `enabled` is laid
    beside the check's status, or on an add form at the end of the name's line."""
    tools = rows("tools")
    named = rows("first")  # the name's line first, then any other field of the group
    first: list[Any] = [*head, (status, "enabled"), *named]
    if status is None:  # an add form: nothing checked yet
        first = [*head, (*named[0], "enabled"), *named[1:]]

    def group(title: str, fields: list[Any], help_text: str, *classes: str) -> tuple[Any, Any]:
        if inline and "collapse" not in classes:  # the fields' labels say it
            return (None, {"classes": list(classes), "fields": fields})
        return _group(title, fields, "" if inline else help_text, *classes)

    if not operator:
        return [
            (None, {"fields": first}),
            group("Catalog entry", rows("catalog"), HELP_CATALOG),
            group("Tools", tools, HELP_TOOLS),
        ]
    catalog: list[Any] = [*rows("catalog"), *(["runs"] if status else [])]
    own = [
        group("Command", rows("command"), HELP_COMMAND, "wb-raw", "wb-stdio"),
        group("Remote", rows("remote"), HELP_REMOTE, "wb-raw", "wb-remote"),
        group("Sign-in", rows("sign_in"), HELP_SIGN_IN, "wb-raw", "wb-remote"),
        group(
            "Working directory and sandbox",
            rows("sandbox"),
            HELP_SANDBOX,
            "wb-raw",
            "wb-stdio",
            "collapse",
        ),
        group("Tools", tools, HELP_TOOLS),
    ]
    if inline:  # a catalog entry or a transport, side by side: one row, not two groups
        catalog[0] = ("catalog_entry", "transport")
        return [(None, {"fields": [*first, *catalog]}), *own]
    return [
        (None, {"fields": first}),
        group("From the catalog", catalog, HELP_CATALOG_OPERATOR, "wb-catalog"),
        group("Or a server of your own", rows("own"), HELP_OWN, "wb-raw"),
        *own,
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
        operator = is_operator(request.user)
        fieldsets = server_fieldsets(operator, status, self.head, inline=inline)
        if operator and not inline and obj is not None and obj.last_check_ok is False:
            first = fieldsets[0][1]["fields"]
            first.insert(len(self.head) + 1, "check_cause")  # under its status
        if self.tail:
            fieldsets.append((None, {"fields": self.tail}))
        return fieldsets


@admin.display(description="parameters")
def parameter_values(obj: Server) -> str:
    """Read-only forms (viewers): plain values, and secret ones masked."""
    values = {**(obj.parameters or {}), **{name: MASK for name in obj.secret_parameters or {}}}
    return ", ".join(f"{name}={value}" for name, value in sorted(values.items())) or "—"


@admin.display(description="what it runs")
def runs(obj: Server | None) -> str:
    """What a catalog-made server runs, its values filled in and secret ones masked (the
    operator's forms: the entry's command, where a server of one's own shows its fields)."""
    if obj is None or obj.pk is None or obj.catalog_entry_id is None:
        return "—"
    shown = copy.copy(obj)
    masked_values: Any = {name: MASK for name in obj.secret_parameters or {}}
    shown.secret_parameters = masked_values
    launch = launch_of(shown)
    line = launch.url or shlex.join([launch.command, *launch.args])
    names = sorted({**launch.env, **launch.headers})
    return line + (f" (with {', '.join(names)})" if names else "")
