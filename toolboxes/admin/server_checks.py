"""Checking a server from the admin: its page, its row in a toolbox, and a list action.

A check connects the server the way the gateway does (`mcp_gateway.check_servers`:
the same transports and sandbox, the classified failures) and records the result as the
server's status. The result page lists the tools (input schemas folded) or the reason and
the tail of the server's stderr; only those who may change the server may run a check.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from accounts.admin_scope import AdminMixin
from mcp_gateway import CheckResult, check_servers
from toolboxes import server_status
from toolboxes.admin.pages import object_for, object_view_url, page
from toolboxes.models import Server
from toolboxes.pins import held

MAX_CHECKS_AT_ONCE = 25  # a list action connects this many servers at most


def checked_line(server: Server, result: CheckResult) -> str:
    """What one check found, in one sentence (messages, the result page)."""
    if result.ok:
        count = len(result.tools)
        return (
            f"Server {server.toolbox.name}/{server.name}: connected in {result.milliseconds} ms, "
            f"{count} tool{'s' if count != 1 else ''}."
        )
    return f"Server {server.toolbox.name}/{server.name}: could not connect: {result.reason}."


def status_html(server: Server) -> str:
    text = server_status.status_text(server)
    css = {True: "wb-ok", False: "wb-failing", None: "wb-unknown"}[server.last_check_ok]
    return format_html('<span class="wb-status {}">{}</span>', css, text)


def check_button(server: Server) -> str:
    """A button inside the page's own form (nested forms are not HTML): it posts that form
    to the check view, which reads nothing of it but the CSRF token."""
    url = reverse("admin:toolboxes_server_check", args=[server.pk])
    return format_html(
        '<button type="submit" class="button wb-check" formaction="{}" formmethod="post" '
        'formnovalidate name="_check">Check now</button>',
        url,
    )


def _schema(tool: dict[str, Any]) -> str:
    return json.dumps(tool.get("inputSchema") or {}, indent=2, sort_keys=True)


def _annotations(tool: dict[str, Any]) -> str:
    annotations = (tool.get("annotations") or {}).items()
    return ", ".join(f"{name}: {json.dumps(value)}" for name, value in annotations)


@admin.display(description="last check")
def check_status(obj: Server | None) -> str:
    """With the button: for those who may change the server (the admin's fieldsets)."""
    if obj is None or obj.pk is None:
        return "—"
    return format_html("{} {}", status_html(obj), check_button(obj))


@admin.display(description="last check")
def check_status_plain(obj: Server | None) -> str:
    if obj is None or obj.pk is None:
        return "—"
    return status_html(obj)


class ServerChecks(AdminMixin):
    """Mixed into ServerAdmin (before ModelAdmin, after TenantScoped)."""

    actions = ["check_selected"]

    @admin.display(description="last check")
    def status(self, obj: Server) -> str:
        return status_html(obj)

    @admin.display(description="tools exposed")
    def filters(self, obj: Server) -> str:
        chosen = obj.tool_filters or []
        shown = "all" if "*" in chosen else (", ".join(chosen) or "none")
        missing = server_status.missing_filters(obj)
        if not missing:
            return shown
        return format_html(
            '{} <span class="wb-warning">⚠ {}</span>', shown, server_status.filter_warning(missing)
        )

    check_status = staticmethod(check_status)
    check_status_plain = staticmethod(check_status_plain)

    @admin.action(description="Check the selected servers (connect and list their tools)")
    def check_selected(self, request: HttpRequest, queryset: QuerySet[Server]) -> None:
        servers = list(queryset.select_related("toolbox__tenant"))
        if len(servers) > MAX_CHECKS_AT_ONCE:
            self.message_user(
                request,
                f"Select at most {MAX_CHECKS_AT_ONCE} servers to check at once.",
                messages.ERROR,
            )
            return
        for server, result in zip(servers, check_servers(servers), strict=True):
            level = messages.SUCCESS if result.ok else messages.ERROR
            self.message_user(request, checked_line(server, result), level)

    def get_urls(self) -> list[Any]:
        return [object_view_url(self, "check", self.check_view), *super().get_urls()]

    def check_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """GET: the last result and a button; POST: check now and show what was found."""
        server = object_for(self, request, object_id)
        result = None
        if request.method == "POST":
            [result] = check_servers([server])
            server.refresh_from_db()
        tools = result.tools if result is not None else []
        missing = server_status.missing_filters(server)
        response = page(
            self,
            request,
            "admin/toolboxes/server/check.html",
            f"Check {server.toolbox}/{server.name}",
            server=server,
            result=result,
            summary=checked_line(server, result) if result else "",
            status=status_html(server),
            tools=[
                {**tool, "schema_text": _schema(tool), "annotations_text": _annotations(tool)}
                for tool in tools
            ],
            missing=server_status.filter_warning(missing) if missing else "",
            held_count=held().filter(server=server).count(),
            held_url=reverse("admin:toolboxes_toolpin_changelist")
            + f"?server__id__exact={server.pk}&status=held",
            change_url=reverse("admin:toolboxes_server_change", args=[server.pk]),
            toolbox_url=reverse("admin:toolboxes_toolbox_change", args=[server.toolbox_id]),
        )
        response["Cache-Control"] = "no-store"  # a stderr tail is for this admin, now
        return response
