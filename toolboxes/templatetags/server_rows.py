"""A toolbox's servers, one line each (admin/toolboxes/toolbox/servers_inline.html): what
the admin looks for first, with the whole form folded under the line."""

from __future__ import annotations

import shlex
from typing import Any

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from kernel.roles import is_operator
from toolboxes.admin.server_checks import check_button, filters_html, held_badge, status_html
from toolboxes.models import Server

register = template.Library()

RUNS_SHOWN = 70  # characters of a command line on the line (the whole in its title)


def runs_text(server: Server, operator: bool) -> str:
    """What the server runs, in a few words: its catalog entry, else (operators only) its
    command line or URL, else its transport."""
    if server.catalog_entry_id is not None:
        return f"catalog: {server.catalog_entry.name}"
    if not operator:
        return server.get_transport_display()
    if server.transport == "stdio":
        return shlex.join([server.command, *(server.args or [])])
    return server.url


@register.simple_tag(takes_context=True)
def server_row(context: dict[str, Any], server: Server) -> SafeString:
    operator = is_operator(context["request"].user)
    runs = runs_text(server, operator)
    shown = runs if len(runs) <= RUNS_SHOWN else runs[: RUNS_SHOWN - 1] + "…"
    return format_html(
        '<b class="wb-server-name">{}{}</b><span class="wb-runs" title="{}">{}</span>'
        '<span class="wb-server-status">{} {}</span><span class="wb-exposed">{}</span>',
        server.name,
        "" if server.enabled else format_html(' <span class="wb-off">(off)</span>'),
        runs,
        shown,
        status_html(server),
        held_badge(server),
        filters_html(server, compact=True),
    )


@register.simple_tag
def server_actions(server: Server, may_change: bool) -> SafeString:
    """Its own page (every field, with their help) and, for those who may, a check."""
    url = reverse("admin:toolboxes_server_change", args=[server.pk])
    return format_html(
        '<a href="{}" class="wb-open">{}</a>{}',
        url,
        "Open" if may_change else "View",
        check_button(server) if may_change else "",
    )
