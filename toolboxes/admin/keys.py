"""API keys in the admin: made, handed to a client once, revoked; and what each key sees.

Creating a key redirects (so a reload never makes a second one) to its hand-off page,
which shows it once (`handoff`: held in the creator's session, encrypted, taken out as it
is shown, so a reload or a second visit shows it no more). Each key's page shows what a
client of it sees: the gateway's own instructions and, per toolbox, the tools
`open_toolbox` would list (asked of the gateway through `gateway_questions.key_sees`), with
their size beside the meta-tools'.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from kernel.admin_kit import handoff
from kernel.admin_kit.pages import confirm_and_act, object_for, object_view_url, page
from kernel.admin_kit.scoping import TenantScoped
from kernel.roles import is_operator
from toolboxes import key_limits
from toolboxes.admin.client_snippets import (
    KEY_PLACEHOLDER,
    configurations,
    public_url,
    toolbox_configurations,
)
from toolboxes.admin.forms import ApiKeyForm
from toolboxes.gateway_questions import (
    KeySees,
    estimated_tokens,
    key_sees,
    tenant_endpoint,
    toolbox_endpoint,
)
from toolboxes.models import ApiKey, Server, ToolPin

HANDOFF_KIND = "api_key"
NEW_KEY_SESSION = handoff.session_key(HANDOFF_KIND)


def toolbox_endpoints(request: HttpRequest, api_key: ApiKey, key: str) -> list[dict[str, Any]]:
    """Each toolbox the key may open that its admin offers as an MCP server of its own:
    its URL and the configurations of the clients that take a server's tools as their own."""
    boxes = api_key.toolboxes.all() if api_key.limited else api_key.tenant.toolboxes.all()
    boxes = boxes.filter(offered_alone=True)
    slug = api_key.tenant.slug
    found = []
    for toolbox in boxes.order_by("name"):
        url = toolbox_endpoint(public_url(request), slug, toolbox.name)
        found.append(
            {
                "name": toolbox.name,
                "url": url,
                "configurations": toolbox_configurations(url, key, toolbox.name),
            }
        )
    return found


def hold_new_key(request: HttpRequest, api_key: ApiKey, full_key: str) -> None:
    """Keep the new key for its hand-off page only (one at a time, encrypted)."""
    handoff.hold(request, HANDOFF_KIND, api_key.pk, full_key)


def take_new_key(request: HttpRequest, api_key: ApiKey) -> str | None:
    """The new key of `api_key`, once: taken out of the session as it is read."""
    return handoff.take(request, HANDOFF_KIND, api_key.pk)


def own_limits(api_key: ApiKey) -> str:
    """The list's words for a key's own limits: "use_tool 5/s, burst 10; open_toolbox 1/s"."""
    parts = []
    for what, rate, burst in (
        ("use_tool", api_key.rate_limit, api_key.rate_burst),
        ("open_toolbox", api_key.open_rate_limit, api_key.open_rate_burst),
    ):
        said = []
        if rate is not None:
            said.append(f"{rate:g}/s" if rate else "no limit")
        if burst is not None:
            said.append(f"burst {burst}")
        if said:
            parts.append(f"{what} {', '.join(said)}")
    return "; ".join(parts)


def offered_tools(api_key: ApiKey) -> dict[int, list[dict[str, Any]]]:
    """What each server of the key's tenant offered last: its last successful connect (an
    admin's check or the gateway's, in the server's order), else what pinning recorded."""
    offered: dict[int, list[dict[str, Any]]] = defaultdict(list)
    rows = ToolPin.objects.filter(server__toolbox__tenant_id=api_key.tenant_id).order_by("pk")
    for server_id, definition in rows.values_list("server_id", "offered_definition"):
        offered[server_id].append(definition)
    checked = Server.objects.filter(toolbox__tenant_id=api_key.tenant_id, last_check_ok=True)
    for server_id, definitions in checked.values_list("pk", "last_check_tools"):
        offered[server_id] = list(definitions or [])
    return dict(offered)


def _sizes(size: int) -> dict[str, int]:
    return {"bytes": size, "tokens": estimated_tokens(size)}


def sees_context(api_key: ApiKey) -> dict[str, Any] | None:
    """The key page's section: the gateway's view of this key, with the saving in numbers."""
    seen: KeySees | None = key_sees(api_key.prefix, offered_tools(api_key))
    if seen is None:
        return None
    pins_url = reverse("admin:toolboxes_toolpin_changelist")
    saving = seen.size - seen.meta_tools_size
    return {
        "seen": seen,
        "toolboxes": [
            {
                "toolbox": toolbox,
                "sizes": _sizes(toolbox.size),
                "servers": [
                    {
                        "server": server,
                        "sizes": _sizes(server.size),
                        "held_url": f"{pins_url}?server__id__exact={server.server_id}&status=held",
                    }
                    for server in toolbox.servers
                ],
            }
            for toolbox in seen.toolboxes
        ],
        "all_tools": _sizes(seen.size),
        "meta_tools": _sizes(seen.meta_tools_size),
        "saving": _sizes(max(saving, 0)),
        "saving_percent": round(100 * saving / seen.size) if seen.size and saving > 0 else 0,
    }


@admin.register(ApiKey)
class ApiKeyAdmin(TenantScoped, admin.ModelAdmin):
    form = ApiKeyForm
    change_form_template = "admin/toolboxes/apikey/change_form.html"
    list_display = [
        "key_prefix",
        "label",
        "tenant",
        "status",
        "own_limits",
        "last_used_at",
        "expires_at",
        "created_at",
    ]
    list_filter = ["tenant", ("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["tenant"]
    search_fields = ["prefix", "label", "tenant__slug", "tenant__name"]
    filter_horizontal = ["toolboxes"]
    actions = ["revoke_keys"]

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        if obj is None:
            return ["tenant", "label", "owner", "toolboxes", "expires_at", *key_limits.NAMES]
        return [
            "tenant",
            "key_prefix",
            "label",
            "owner",
            "toolboxes",
            "expires_at",
            *key_limits.NAMES,
            "status",
            "created_at",
            "last_used_at",
            "revoked_at",
            "revoke_link",
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        if obj is None:
            return []
        return [
            "tenant",
            "key_prefix",
            "owner",
            "status",
            "created_at",
            "last_used_at",
            "revoked_at",
            "revoke_link",
        ]

    def get_form(
        self, request: HttpRequest, obj: ApiKey | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        """The form knows whether its user may raise a key's limits (operators only)."""
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"operator": is_operator(request.user)})

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any):
        """A personal key's owner: a member makes one for themself; an operator for any
        member (the model checks the membership in the key's tenant)."""
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if db_field.name == "owner" and field is not None:
            users = get_user_model()._default_manager.filter(memberships__isnull=False).distinct()
            if not is_operator(request.user):
                users = users.filter(pk=request.user.pk)
            field.queryset = users
        return field

    @admin.display(description="key", ordering="prefix")
    def key_prefix(self, obj: ApiKey) -> str:
        return f"wb_{obj.prefix}_…"

    @admin.display(description="status")
    def status(self, obj: ApiKey) -> str:
        return obj.status

    @admin.display(description="own limits")
    def own_limits(self, obj: ApiKey) -> str:
        """The key's own limits where set (the empty mark where the installation's apply)."""
        return own_limits(obj) or self.get_empty_value_display()

    @admin.display(description="revoke")
    def revoke_link(self, obj: ApiKey) -> str:
        if obj.revoked_at is not None:
            return "Revoked."
        url = reverse("admin:toolboxes_apikey_revoke", args=[obj.pk])
        return format_html('<a class="deletelink" href="{}">Revoke this key…</a>', url)

    # --- made and handed over once ---------------------------------------------------

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        hold_new_key(request, obj, obj.assign_new_key())

    def response_add(
        self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None
    ) -> HttpResponse:
        """Away from the POST: reloading the next page must not make another key."""
        return HttpResponseRedirect(reverse("admin:toolboxes_apikey_handoff", args=[obj.pk]))

    def handoff_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        api_key = object_for(self, request, object_id, may=self.has_view_permission)
        full_key = take_new_key(request, api_key)
        url = tenant_endpoint(public_url(request), api_key.tenant.slug)
        response = page(
            self,
            request,
            "admin/toolboxes/apikey/created.html",
            "API key created" if full_key else f"Use {api_key} in a client",
            api_key=api_key,
            full_key=full_key,
            gateway_url=url,
            configurations=configurations(url, full_key or KEY_PLACEHOLDER),
            toolbox_endpoints=toolbox_endpoints(request, api_key, full_key or KEY_PLACEHOLDER),
            change_url=reverse("admin:toolboxes_apikey_change", args=[api_key.pk]),
            add_url=reverse("admin:toolboxes_apikey_add") + f"?tenant={api_key.tenant_id}",
        )
        response["Cache-Control"] = "no-store"
        return response

    # --- what it sees ----------------------------------------------------------------

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        api_key = self.get_object(request, object_id)  # out of scope: 404 (TenantScoped)
        extra = {
            **(extra_context or {}),
            "key_sees": sees_context(api_key),
            "handoff_url": reverse("admin:toolboxes_apikey_handoff", args=[api_key.pk]),
            "usage_url": reverse("admin:calls_callrecord_usage")
            + f"?tenant={api_key.tenant_id}&key={api_key.pk}",
            "calls_url": reverse("admin:calls_callrecord_changelist")
            + f"?opens=all&key__id__exact={api_key.pk}",
        }
        return super().change_view(request, object_id, form_url, extra)

    # --- revoked ---------------------------------------------------------------------

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = queryset.revoke()
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)

    def get_urls(self) -> list[Any]:
        return [
            object_view_url(self, "revoke", self.revoke_view),
            object_view_url(self, "handoff", self.handoff_view),
            *super().get_urls(),
        ]

    def revoke_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        api_key = object_for(self, request, object_id)
        question = format_html(
            "Revoke <strong>{}</strong> of tenant <strong>{}</strong>? It stops working at once, "
            "also for sessions already open. This cannot be undone.",
            api_key,
            api_key.tenant.slug,
        )
        return confirm_and_act(
            self,
            request,
            api_key,
            verb="Revoke",
            done="Revoked",
            act=api_key.revoke,
            question=question,
        )
