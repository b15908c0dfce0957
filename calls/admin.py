"""The call log in the admin: read-only rows with filters and an incident-id search, and
a usage page per tenant (or per key). Tenant members see only their tenants' calls
(TenantScoped).

The list hides successful `open_toolbox` rows unless asked (`OpensFilter`): every client
session opens its toolboxes, again after each reconnect, so they were most rows (298
after five minutes of one client, issue 37) while saying nothing an admin looks for; a
failed open stays listed, and the usage page counts them all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Case, F, IntegerField, Model, OuterRef, Q, QuerySet, Subquery, When
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from calls import approvals as deciding
from calls import usage
from calls.models import Approval, CallRecord, PayloadCapture
from calls.views import client_address, time_left
from kernel import approvals
from kernel.admin_kit.pages import list_view_url, page
from kernel.admin_kit.scoping import TenantScoped
from kernel.roles import ADMIN, is_operator, tenant_ids
from toolboxes.models import ApiKey, Tenant

OPEN_TOOLBOX = "open_toolbox"
TIME_FORMAT = "%H:%M:%S"  # the list's times, to the second, in local time


class OpensFilter(admin.SimpleListFilter):
    """open_toolbox rows: the failed ones only (the default), all, or none."""

    title = "open_toolbox rows"
    parameter_name = "opens"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("all", "all"), ("none", "none")]

    def choices(self, changelist: Any) -> Any:
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "failed ones only",
        }
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "all":
            return queryset
        if self.value() == "none":
            return queryset.exclude(meta_tool=OPEN_TOOLBOX)
        return queryset.exclude(Q(meta_tool=OPEN_TOOLBOX) & Q(outcome="ok"))


@admin.register(CallRecord)
class CallRecordAdmin(TenantScoped, admin.ModelAdmin):
    tenant_path = "tenant"
    members_may = frozenset()  # members read their calls; nobody edits the log
    change_list_template = "admin/calls/callrecord/change_list.html"
    list_display = (
        "when",
        "tenant",
        "key_prefix",
        "client",
        "call",
        "outcome",
        "duration",
        "incident",
    )
    list_display_links = ("when",)
    list_filter = (
        OpensFilter,
        "tenant",
        "key",
        "outcome",
        "meta_tool",
        "server",
        "tool",
        ("at", admin.DateFieldListFilter),
    )
    # "=": an exact incident id (or key prefix) as a client reported it.
    search_fields = ("=incident", "=key_prefix", "tool", "client_name")
    date_hierarchy = "at"
    list_select_related = ("tenant",)
    show_full_result_count = False  # a count(*) over a large log is slow

    class Media:
        css = {"all": ["calls/call_log.css"]}

    @admin.display(description="time", ordering="at")
    def when(self, obj: CallRecord) -> str:
        return when(obj.at)

    @admin.display(description="call", ordering="meta_tool")
    def call(self, obj: CallRecord) -> str:
        """The meta-tool and what it was about: "use_tool dev/fs/read_file" (a narrow
        column breaks the path after a slash, never inside a name)."""
        parts = [part for part in (obj.toolbox, obj.server, obj.tool) if part]
        what = format_html_join(mark_safe("/<wbr>"), "{}", ((part,) for part in parts))
        return format_html('{} <span class="wb-what">{}</span>', obj.meta_tool, what)

    @admin.display(description="client", ordering="client_name")
    def client(self, obj: CallRecord) -> str:
        return obj.client_name

    @admin.display(description="ms", ordering="duration_ms")
    def duration(self, obj: CallRecord) -> str:
        return f"{obj.duration_ms:,.0f}" if obj.duration_ms >= 10 else f"{obj.duration_ms:.1f}"

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[Any]:
        return [field.name for field in CallRecord._meta.fields]

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        context = {**(extra_context or {}), "usage_url": usage_url(request.GET)}
        return super().changelist_view(request, context)

    def get_urls(self) -> list[URLPattern]:
        return [list_view_url(self, "usage", self.usage_view), *super().get_urls()]

    @staticmethod
    def busiest(tenants: QuerySet[Tenant]) -> Tenant | None:
        """The usage page's tenant when none is asked for: of those the user may see, the
        one with the latest call (each tenant's read on the log's (tenant, -at) index),
        else the first by slug."""
        latest = CallRecord.objects.filter(tenant=OuterRef("pk")).order_by("-at").values("at")
        return (
            tenants.annotate(latest_call=Subquery(latest[:1]))
            .order_by(F("latest_call").desc(nulls_last=True), "slug")
            .first()
        )

    def usage_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        tenants = Tenant.objects.order_by("slug")
        if not is_operator(request.user):
            tenants = tenants.filter(pk__in=tenant_ids(request.user))
        key = _number(request.GET.get("key"))
        asked = _number(request.GET.get("tenant"))
        chosen_key = ApiKey.objects.filter(pk=key, tenant__in=tenants).first() if key else None
        if chosen_key is not None and asked in (None, chosen_key.tenant_id):
            asked = chosen_key.tenant_id
        else:
            chosen_key = None  # another tenant's key, or one out of reach: the tenant's usage
        chosen = tenants.filter(pk=asked or 0).first() or self.busiest(tenants)
        window = request.GET.get("window", "day")
        window = window if window in usage.WINDOWS else "day"
        stats = None
        keys: QuerySet[ApiKey] = ApiKey.objects.none()
        if chosen is not None:
            records = self.get_queryset(request).filter(tenant=chosen)
            held = Approval.objects.filter(tenant=chosen)
            if chosen_key is not None:
                records = records.filter(key=chosen_key)
                held = held.filter(key=chosen_key)
            stats = usage.summary(records, window, held=held)
            keys = ApiKey.objects.filter(tenant=chosen).order_by("prefix")
        about = f"{chosen}" + (f", key {chosen_key.prefix}" if chosen_key else "")
        return page(
            self,
            request,
            "admin/calls/usage.html",
            f"Usage: {about}" if chosen else "Usage",
            tenants=tenants,
            chosen=chosen,
            keys=keys,
            chosen_key=chosen_key,
            window=window,
            windows=list(usage.WINDOWS),
            stats=stats,
            log_url=reverse("admin:calls_callrecord_changelist"),
            log_filter=_log_filter(chosen, chosen_key),
        )


def when(moment: datetime, now: datetime | None = None) -> str:
    """A call's time to the second, in local time; its day too unless it is today's:
    "17:27:27", "Nov 26 17:27:27", "2025-11-26 17:27:27"."""
    local, today = timezone.localtime(moment), timezone.localtime(now or timezone.now())
    if local.date() == today.date():
        return local.strftime(TIME_FORMAT)
    if local.year == today.year:
        return local.strftime(f"%b %d {TIME_FORMAT}")
    return local.strftime(f"%Y-%m-%d {TIME_FORMAT}")


def _number(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def _log_filter(tenant: Tenant | None, key: ApiKey | None) -> str:
    """The call log's query string for the usage page's tenant (and key)."""
    if tenant is None:
        return "opens=all"
    query = f"opens=all&tenant__id__exact={tenant.pk}"
    return query + (f"&key__id__exact={key.pk}" if key else "")


def usage_url(query: Any) -> str:
    """The usage page for what the call log shows (its tenant and key filters kept)."""
    url = reverse("admin:calls_callrecord_usage")
    wanted = {"tenant": query.get("tenant__id__exact"), "key": query.get("key__id__exact")}
    kept = {name: found for name, value in wanted.items() if (found := _number(value))}
    return f"{url}?{urlencode(kept)}" if kept else url


@admin.register(PayloadCapture)
class PayloadCaptureAdmin(TenantScoped, admin.ModelAdmin):
    """Operators decide whether a tenant's arguments and results are kept."""

    tenant_path = "tenant"
    members_may = frozenset()
    list_display = ("tenant", "enabled")


@admin.register(Approval)
class ApprovalAdmin(TenantScoped, admin.ModelAdmin):
    """The approvals' queue: read-only rows; viewers see them, the tenant's admins (and
    named approvers, on the approval page) decide them."""

    tenant_path = "tenant"
    members_may = frozenset()  # nobody edits a held call: a person decides it
    change_form_template = "admin/calls/approval/change_form.html"
    list_display = (
        "asked",
        "status_shown",
        "tenant",
        "caller_label",
        "call",
        "left",
        "decision",
        "page_link",
    )
    list_display_links = ("asked",)
    list_filter = ("status", "tenant", ("created_at", admin.DateFieldListFilter))
    search_fields = ("tool", "server", "toolbox", "caller_label", "=public_id")
    list_select_related = ("tenant", "decided_by")
    actions = ("approve_selected", "refuse_selected")
    fields = (
        "tenant",
        "caller_label",
        "caller",
        "toolbox",
        "server",
        "tool",
        "arguments_shown",
        "reason",
        "status",
        "created_at",
        "expires_at",
        "self_approval",
        "approvers",
        "decided_by",
        "decided_at",
        "decided_from",
        "used_at",
        "arguments_digest",
    )

    class Media:
        css = {"all": ["calls/call_log.css"]}

    def get_ordering(self, request: HttpRequest) -> list[Any]:
        """Pending first, then the newest."""
        waiting = Case(
            When(status=approvals.PENDING, then=0), default=1, output_field=IntegerField()
        )
        return [waiting.asc(), "-created_at"]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        deciding.expire_due()  # the list says what is still pending now
        context = {"title": "Approvals: calls waiting for a person", **(extra_context or {})}
        return super().changelist_view(request, context)

    @admin.display(description="time left", ordering="expires_at")
    def left(self, obj: Approval) -> str:
        return time_left(obj) if obj.status == approvals.PENDING else ""

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[Any]:
        return list(self.fields)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        """The decisions for operators and tenants' admins (viewers read the queue)."""
        if not (is_operator(request.user) or tenant_ids(request.user, (ADMIN,))):
            return {}
        return super().get_actions(request)

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    @admin.display(description="asked", ordering="created_at")
    def asked(self, obj: Approval) -> str:
        return when(obj.created_at)

    @admin.display(description="status", ordering="status")
    def status_shown(self, obj: Approval) -> str:
        return format_html(
            '<span class="wb-approval-{}">{}</span>', obj.status, obj.get_status_display()
        )

    @admin.display(description="call")
    def call(self, obj: Approval) -> str:
        parts = (obj.toolbox, obj.server, obj.tool)
        return format_html_join(mark_safe("/<wbr>"), "{}", ((part,) for part in parts))

    @admin.display(description="decided")
    def decision(self, obj: Approval) -> str:
        if obj.decided_by is None:
            return ""
        address = obj.decided_from or "an unknown address"
        return f"{obj.decided_by.get_username()}, {when(obj.decided_at)}, from {address}"

    @admin.display(description="")
    def page_link(self, obj: Approval) -> str:
        verb = "Decide" if obj.status == approvals.PENDING else "Open"
        return format_html('<a class="button wb-decide" href="{}">{}</a>', approval_url(obj), verb)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        obj = self.get_object(request, object_id)
        context = {**(extra_context or {}), "approval_url": approval_url(obj)}
        return super().change_view(request, object_id, form_url, context)

    @admin.action(description="Approve the selected calls")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._decide(request, queryset, approve=True)

    @admin.action(description="Refuse the selected calls")
    def refuse_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._decide(request, queryset, approve=False)

    def _decide(self, request: HttpRequest, queryset: QuerySet[Any], approve: bool) -> None:
        """Each selected call through `decide` (its own rules, one row locked at a time);
        what was not decided is said with its reason."""
        address = client_address(request)
        done = 0
        for approval in queryset:
            decided = deciding.decide(approval.pk, request.user, approve, address)
            if decided.refused_because is None:
                done += 1
            else:
                messages.warning(request, f"{approval}: {decided.refused_because}")
        if done:
            verb = "Approved" if approve else "Refused"
            messages.success(request, f"{verb} {done} call{'s' if done != 1 else ''}.")


def approval_url(approval: Approval) -> str:
    """The approval page of a held call (this site's path)."""
    return reverse("approval", args=[approval.public_id])
