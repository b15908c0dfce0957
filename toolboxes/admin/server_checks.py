"""Checking a server from the admin: its page, its row in a toolbox, and a list action.

A check connects the server the way the gateway does (`gateway_questions.check_servers`:
the same transports and sandbox, the classified failures) and records the result as the
server's status. It runs in the background (`background_checks`): saving a server, its
"Check now" button and the list action start one and answer at once; wherever a status
shows, it says "checking…" and the page asks `<id>/status/` (`server_status.js`) until
the result arrives, shown in place. The check page lists the tools (input schemas folded)
or the reason and the tail of the server's stderr; only those who may change the server
may run a check.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html

from kernel.admin_kit.pages import object_for, object_view_url, page
from kernel.admin_kit.scoping import AdminMixin
from kernel.roles import is_operator
from toolboxes import server_status
from toolboxes.admin import background_checks
from toolboxes.gateway_questions import CheckResult
from toolboxes.models import Server

MAX_CHECKS_AT_ONCE = 25  # a list action starts this many checks at most
STATUS_SCRIPT = "toolboxes/server_status.js"
STATUS_CSS = "toolboxes/server_form.css"
RESULT_TEMPLATE = "admin/toolboxes/server/check_result.html"
QUEUE_FULL = "Too many checks are waiting: check {} again in a minute."


def checked_line(server: Server, result: CheckResult) -> str:
    """What one check found, in one sentence (the check page)."""
    if result.ok:
        count = len(result.tools)
        return (
            f"Server {server.toolbox.name}/{server.name}: connected in {result.milliseconds} ms, "
            f"{count} tool{'s' if count != 1 else ''}."
        )
    return f"Server {server.toolbox.name}/{server.name}: could not connect: {result.reason}."


def checking_text(since: float) -> str:
    """A status while its check runs: how long it has been going, so that it moves."""
    return f"checking… {max(0, round(time.time() - since))} s"


def status_state(server: Server, since: float | None) -> tuple[str, str]:
    """(css state, text) of a server's status: checking, ok, failing or unknown."""
    if since is not None:
        return "checking", checking_text(since)
    state = {True: "ok", False: "failing", None: "unknown"}[server.last_check_ok]
    return state, server_status.status_text(server)


def status_url(server: Server) -> str:
    return reverse("admin:toolboxes_server_status", args=[server.pk])


def status_html(server: Server, result_target: str = "") -> str:
    """The status in a span that, while the server is being checked, the page's script
    keeps up to date (and, given `result_target`, fills that element with the result)."""
    since = background_checks.checking_since([server.pk]).get(server.pk)
    state, text = status_state(server, since)
    return format_html(
        '<span class="wb-status wb-{}" data-status-url="{}" data-deadline="{}"{}>{}</span>',
        state,
        status_url(server),
        background_checks.deadline_seconds(),
        format_html(' data-result-target="{}"', result_target) if result_target else "",
        text,
    )


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


def held_url(server: Server) -> str:
    return (
        reverse("admin:toolboxes_toolpin_changelist")
        + f"?server__id__exact={server.pk}&status=held"
    )


def held_badge(server: Server) -> str:
    """ "2 held", linked to those tools' list, for a server whose tools wait for an admin."""
    found = server_status.held_of(server)
    if not found.waiting:
        return ""
    return format_html(
        '<a class="wb-held-badge" href="{}" title="tool definitions waiting for an admin">'
        "{} held</a>",
        held_url(server),
        found.waiting,
    )


def stored_result(server: Server) -> CheckResult | None:
    """The last check as the server's row keeps it (its status): a failure's reason,
    incident and cause, once the background check's own outcome is gone."""
    if server.last_check_ok is not False:
        return None
    return CheckResult(
        False,
        server.last_check_ms or 0,
        reason=server.last_check_reason,
        incident=server.last_check_incident or None,
        cause=server.last_check_cause,
    )


def result_context(server: Server, request: HttpRequest) -> dict[str, Any]:
    """What the check page shows of the last check: the background check's outcome while
    it is kept (`background_checks.last_result`), else the stored status and tools. The
    cause of a failure (what happened, what to change) is for operators: it may name the
    command, a host's address, the gateway's settings."""
    kept = background_checks.last_result(server)
    result = kept or stored_result(server)
    if result is not None and result.ok:
        tools = result.tools
    else:
        tools = list(server.last_check_tools or []) if server.last_check_ok else []
    missing = server_status.missing_filters(server)
    return {
        "server": server,
        "result": result,
        "stored": kept is None,  # the row's status: no stderr tail kept with it
        "cause": result.cause if result is not None and is_operator(request.user) else "",
        "summary": checked_line(server, result) if result else "",
        "status": server_status.status_text(server),
        "tools": [
            {**tool, "schema_text": _schema(tool), "annotations_text": _annotations(tool)}
            for tool in tools
        ],
        "missing": server_status.filter_warning(missing) if missing else "",
        "held_count": server_status.held_of(server).waiting,
        "held_url": held_url(server),
    }


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


@admin.display(description="cause")
def check_cause(obj: Server | None) -> str:
    """A failing server's cause, for operators (the server page's fieldsets): what
    happened and what to change, beyond the phrase clients read."""
    if obj is None or obj.last_check_ok is not False:
        return "—"
    return format_html(
        '<pre class="wb-cause" id="check-cause">{}</pre>', obj.last_check_cause or "—"
    )


def filters_html(server: Server, compact: bool = False) -> str:
    """The tools a toolbox exposes of its server, and a filter naming one it does not offer
    (`compact`: in a word, the sentence in its title)."""
    chosen = server.tool_filters or []
    shown = "all" if "*" in chosen else (", ".join(chosen) or "none")
    missing = server_status.missing_filters(server)
    if not missing:
        return shown
    warning = server_status.filter_warning(missing)
    if compact:
        return format_html(
            '{} <span class="wb-warning" title="{}">⚠ not offered</span>', shown, warning
        )
    return format_html('{} <span class="wb-warning">⚠ {}</span>', shown, warning)


def say_refused(model_admin: admin.ModelAdmin, request: HttpRequest, servers: list[Server]) -> None:
    if servers:
        names = ", ".join(f"{server.toolbox.name}/{server.name}" for server in servers)
        model_admin.message_user(request, QUEUE_FULL.format(names), messages.ERROR)


class ServerChecks(AdminMixin):
    """Mixed into ServerAdmin (before ModelAdmin, after TenantScoped)."""

    actions = ["check_selected"]

    class Media:
        js = [STATUS_SCRIPT]
        css = {"all": [STATUS_CSS]}

    @admin.display(description="last check")
    def status(self, obj: Server) -> str:
        """Its status, and a badge when some of its tools wait for an admin."""
        return format_html("{} {}", status_html(obj), held_badge(obj))

    @admin.display(description="tools")
    def filters(self, obj: Server) -> str:
        return filters_html(obj)

    check_status = staticmethod(check_status)
    check_status_plain = staticmethod(check_status_plain)
    check_cause = staticmethod(check_cause)

    def check_in_background(self, request: HttpRequest, servers: list[Server]) -> list[Server]:
        """Start each server's check; say which the full queue refused. The started ones."""
        _, refused = background_checks.start(server.pk for server in servers)
        say_refused(self, request, [server for server in servers if server.pk in refused])
        return [server for server in servers if server.pk not in refused]

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
        started = self.check_in_background(request, servers)
        if started:
            count = len(started)
            self.message_user(
                request,
                f"Checking {count} server{'s' if count != 1 else ''}: "
                "each status below shows its result when its check ends.",
                messages.INFO,
            )

    def get_urls(self) -> list[Any]:
        return [
            object_view_url(self, "check", self.check_view),
            object_view_url(self, "status", self.status_view),
            *super().get_urls(),
        ]

    def check_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """GET: the last check (or "checking…", then its result in place) and a button;
        POST: start a check and come back here (a reload starts nothing)."""
        server = object_for(self, request, object_id)
        if request.method == "POST":
            self.check_in_background(request, [server])
            return HttpResponseRedirect(request.path)
        response = page(
            self,
            request,
            "admin/toolboxes/server/check.html",
            f"Check {server.toolbox}/{server.name}",
            **result_context(server, request),
            checking=bool(background_checks.checking_since([server.pk])),
            status_span=status_html(server, result_target="check-result"),
            change_url=reverse("admin:toolboxes_server_change", args=[server.pk]),
            toolbox_url=reverse("admin:toolboxes_toolbox_change", args=[server.toolbox_id]),
        )
        response["Cache-Control"] = "no-store"  # a stderr tail is for this admin, now
        return response

    def status_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """The server's status as the page's script asks for it while a check runs; with
        `?result=1`, once it ended, the check page's result too (for those who may check)."""
        server = object_for(self, request, object_id, may=self.has_view_permission)
        since = background_checks.checking_since([server.pk]).get(server.pk)
        state, text = status_state(server, since)
        answer: dict[str, Any] = {"checking": since is not None, "state": state, "text": text}
        if (
            since is None
            and request.GET.get("result")
            and self.has_change_permission(request, server)
        ):
            answer["result_html"] = render_to_string(
                RESULT_TEMPLATE, result_context(server, request), request=request
            )
        return JsonResponse(answer)  # not cached: admin_view's never_cache
