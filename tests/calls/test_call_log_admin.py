"""The call log in the admin: a tenant member sees only its tenants' calls and usage; an
incident id finds its call; prune_calls keeps the retention."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from accounts.models import Membership
from calls.models import CallRecord
from toolboxes.models import Tenant

CHANGELIST = "/admin/calls/callrecord/"
USAGE = "/admin/calls/callrecord/usage/"


def record(tenant: Tenant, tool: str, outcome: str = "ok", **fields: Any) -> CallRecord:
    return CallRecord.objects.create(
        at=fields.pop("at", timezone.now()),
        tenant=tenant,
        meta_tool="use_tool",
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
