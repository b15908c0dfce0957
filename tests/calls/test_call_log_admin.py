"""The call log in the admin: a tenant member sees only its tenants' calls and usage; an
incident id finds its call; successful opens folded away; times to the second; usage of
every meta-tool per tool and per key with a chart that has axes, linked from where it
belongs; prune_calls keeps the retention."""

from __future__ import annotations

from datetime import datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from accounts.models import Membership
from calls import usage
from calls.models import CallRecord
from toolboxes.models import ApiKey, Tenant

CHANGELIST = "/admin/calls/callrecord/"
USAGE = "/admin/calls/callrecord/usage/"


def record(tenant: Tenant, tool: str, outcome: str = "ok", **fields: Any) -> CallRecord:
    return CallRecord.objects.create(
        at=fields.pop("at", timezone.now()),
        tenant=tenant,
        meta_tool=fields.pop("meta_tool", "use_tool"),
        toolbox="dev",
        server="fs",
        tool=tool,
        duration_ms=fields.pop("duration_ms", 10.0),
        outcome=outcome,
        error_code="" if outcome in ("ok", "tool_error") else outcome,
        **fields,
    )


@pytest.fixture
def two_tenants(db: None) -> tuple[Tenant, Tenant]:
    acme = Tenant.objects.create(slug="acme")
    other = Tenant.objects.create(slug="other")
    record(acme, "acme_tool")
    record(acme, "acme_tool", "TIMEOUT", incident="abc123def456", duration_ms=900.0)
    record(other, "other_tool", incident="ffff00001111")
    return acme, other


@pytest.fixture
def member(django_user_model: Any, two_tenants: tuple[Tenant, Tenant]) -> Client:
    user = django_user_model.objects.create_user("viewer", password="pw-viewer-123", is_staff=True)
    Membership.objects.create(user=user, tenant=two_tenants[0], role="viewer")
    client = Client()
    client.force_login(user)
    return client


def test_a_member_sees_only_its_tenants_calls(member: Client) -> None:
    page = member.get(CHANGELIST)
    assert page.status_code == 200
    text = page.content.decode()
    assert text.count("acme_tool") >= 2
    assert "other_tool" not in text


def test_a_member_cannot_open_another_tenants_call(member: Client, two_tenants: Any) -> None:
    theirs = CallRecord.objects.get(tool="other_tool")
    assert member.get(f"{CHANGELIST}{theirs.pk}/change/").status_code == 404


def test_an_incident_id_finds_its_call(admin_client: Client, two_tenants: Any) -> None:
    found = admin_client.get(CHANGELIST, {"q": "abc123def456"}).context["cl"].result_list
    assert [(row.tool, row.outcome) for row in found] == [("acme_tool", "TIMEOUT")]


def test_a_member_searching_another_tenants_incident_finds_nothing(member: Client) -> None:
    assert list(member.get(CHANGELIST, {"q": "ffff00001111"}).context["cl"].result_list) == []


def test_usage_page_counts_errors_and_percentiles(member: Client, two_tenants: Any) -> None:
    acme, other = two_tenants
    page = member.get(USAGE, {"tenant": other.pk, "window": "week"})  # not theirs: acme shown
    assert page.status_code == 200
    stats = page.context["stats"]
    assert page.context["chosen"] == acme
    assert (stats["calls"], stats["errors"]) == (2, 1)
    [line] = stats["tools"]
    assert (line.name, line.calls, line.errors, line.p50, line.p95) == (
        "dev/fs/acme_tool",
        2,
        1,
        10.0,
        900.0,
    )
    assert "<svg" in page.content.decode()
    assert [tenant.slug for tenant in page.context["tenants"]] == ["acme"]


def test_nobody_edits_the_call_log(admin_client: Client, two_tenants: Any) -> None:
    one = CallRecord.objects.first()
    assert admin_client.get(f"{CHANGELIST}add/").status_code == 403
    assert admin_client.post(f"{CHANGELIST}{one.pk}/change/", {"tool": "x"}).status_code == 403


def test_prune_calls_keeps_the_retention(settings: Any, two_tenants: Any) -> None:
    settings.WORKBENCH_CALL_LOG_RETENTION_DAYS = 7
    acme, _ = two_tenants
    record(acme, "old", at=timezone.now() - timedelta(days=8))
    out = StringIO()
    call_command("prune_calls", stdout=out)
    assert "Deleted 1 call log rows older than 7 days." in out.getvalue()
    assert not CallRecord.objects.filter(tool="old").exists()
    assert CallRecord.objects.count() == 3


def test_usage_opens_on_the_tenant_with_the_latest_call(
    admin_client: Client, django_user_model: Any, db: None
) -> None:
    """Not the first by slug: the one with traffic, among those the user may see; with no
    calls at all, the first by slug."""
    quiet, busy, older = (Tenant.objects.create(slug=slug) for slug in ("aaa", "zed", "mid"))
    assert admin_client.get(USAGE).context["chosen"] == quiet  # no calls yet
    record(older, "old_tool", at=timezone.now() - timedelta(hours=3))
    record(busy, "new_tool")
    page = admin_client.get(USAGE)
    assert page.context["chosen"] == busy
    assert "<title>Usage: zed |" in page.content.decode()
    user = django_user_model.objects.create_user("vera", password="pw-vera-123", is_staff=True)
    for tenant in (quiet, older):
        Membership.objects.create(user=user, tenant=tenant, role="viewer")
    member = Client()
    member.force_login(user)
    assert member.get(USAGE).context["chosen"] == older  # zed's calls are not theirs


def test_successful_opens_are_hidden_unless_asked(admin_client: Client, two_tenants: Any) -> None:
    """Every session opens its toolboxes: the list leaves the successful opens out by
    default (a failed one stays), and shows them all, or no open at all, when asked."""
    acme, _ = two_tenants
    record(acme, "", meta_tool="open_toolbox")
    record(acme, "", "TOOLBOX_NOT_FOUND", meta_tool="open_toolbox")

    def listed(**query: str) -> list[tuple[str, str]]:
        rows = admin_client.get(CHANGELIST, query).context["cl"].result_list
        return sorted((row.meta_tool, row.outcome) for row in rows)

    uses = [("use_tool", "TIMEOUT"), ("use_tool", "ok"), ("use_tool", "ok")]
    assert listed() == [("open_toolbox", "TOOLBOX_NOT_FOUND"), *uses]
    assert listed(opens="all") == [
        ("open_toolbox", "TOOLBOX_NOT_FOUND"),
        ("open_toolbox", "ok"),
        *uses,
    ]
    assert listed(opens="none") == uses
    page = admin_client.get(CHANGELIST).content.decode()
    assert 'id="opens-hidden">Successful <code>open_toolbox</code> calls are hidden' in page
    assert f'href="{USAGE}" id="usage-link"' in page
    filtered = admin_client.get(CHANGELIST, {"tenant__id__exact": acme.pk}).content.decode()
    assert f'href="{USAGE}?tenant={acme.pk}" id="usage-link"' in filtered


def test_times_are_shown_to_the_second() -> None:
    now = timezone.make_aware(datetime(2026, 11, 27, 17, 30, 0))
    from calls.admin import when

    assert when(now - timedelta(minutes=3, seconds=5), now) == "17:26:55"
    assert when(now - timedelta(days=1), now) == "Nov 26 17:30:00"
    assert when(now - timedelta(days=365), now) == "2025-11-27 17:30:00"


def test_usage_counts_every_meta_tool_per_tool_and_per_key(
    admin_client: Client, two_tenants: Any
) -> None:
    acme, _ = two_tenants
    key, _ = ApiKey.issue(acme, label="laptop")
    record(acme, "", meta_tool="open_toolbox", key=key, key_prefix=key.prefix)
    record(acme, "acme_tool", key=key, key_prefix=key.prefix)
    record(acme, "acme_tool", member="ada")
    stats = admin_client.get(USAGE, {"tenant": acme.pk}).context["stats"]
    assert stats["calls"] == 5
    assert [(line.name, line.calls) for line in stats["meta_tools"]] == [
        ("use_tool", 4),
        ("open_toolbox", 1),
    ]
    # Most calls first (ties by name): the fixture's calls name neither key nor member.
    assert [(line.name, line.calls) for line in stats["keys"]] == [
        *sorted([("unknown", 2), (f"{key.prefix} laptop", 2)]),
        ("OAuth: ada", 1),
    ]
    page = admin_client.get(USAGE, {"tenant": acme.pk, "key": key.pk})
    assert page.context["chosen_key"] == key
    assert page.context["stats"]["calls"] == 2
    html = page.content.decode()
    log = f"/admin/calls/callrecord/?opens=all&amp;tenant__id__exact={acme.pk}"
    assert f'href="{log}&amp;key__id__exact={key.pk}"' in html


def test_the_chart_has_axes() -> None:
    """A y axis of calls (0, its half and a round top) and a time axis of the slots'
    starts, every few bars."""
    now = timezone.make_aware(datetime(2026, 11, 27, 17, 30, 0))
    start = usage.slot_start(now, timedelta(hours=1)) + timedelta(hours=1) - timedelta(days=1)
    slots = [0] * 24
    slots[-1], slots[-2] = 7, 3
    starts = [start + timedelta(hours=index) for index in range(24)]
    chart = usage.chart(slots, [0] * 23 + [2], starts, usage.WINDOWS["day"])
    assert [tick["value"] for tick in chart["y_ticks"]] == [0, 4, 8]
    assert [tick["y"] for tick in chart["y_ticks"]] == [chart["bottom"], 88.0, chart["top"]]
    assert [tick["label"] for tick in chart["x_ticks"]] == [
        "18:00",
        "22:00",
        "02:00",
        "06:00",
        "10:00",
        "14:00",
    ]
    last = chart["bars"][-1]
    assert (last["count"], last["bad"], last["label"]) == (7, 2, "17:00")
    assert last["y"] == round(chart["bottom"] - (chart["bottom"] - chart["top"]) * 7 / 8, 1)


def test_usage_is_linked_from_the_menu_the_tenant_and_the_key(
    admin_client: Client, two_tenants: Any
) -> None:
    acme, _ = two_tenants
    key, _ = ApiKey.issue(acme, label="laptop")
    home = admin_client.get("/admin/").content.decode()
    assert f'<a href="{USAGE}">Usage</a>' in home
    tenant = admin_client.get(f"/admin/toolboxes/tenant/{acme.pk}/change/").content.decode()
    assert f'<a href="{USAGE}?tenant={acme.pk}" id="tenant-usage">Usage</a>' in tenant
    key_page = admin_client.get(f"/admin/toolboxes/apikey/{key.pk}/change/").content.decode()
    assert f'<a href="{USAGE}?tenant={acme.pk}&amp;key={key.pk}" id="key-usage">' in key_page
