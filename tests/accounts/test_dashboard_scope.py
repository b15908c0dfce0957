"""The admin's home (the dashboard) and the usage page, scoped like every other screen: a
tenant's members see their tenants' servers, held tools, calls and failures only, and
another tenant's key on the usage page is as if not asked for; an operator sees all."""

from __future__ import annotations

import pytest
from django.utils import timezone

from calls.models import CallRecord
from toolboxes.models import ApiKey, Server, ToolPin

from .conftest import acme, as_user, globex, people  # noqa: F401

USAGE = "/admin/calls/callrecord/usage/"


@pytest.fixture
def trouble(acme, globex):  # noqa: F811
    """In each tenant: its server failing (an incident of its own), a tool held on its
    remote server, a failed call and an ok one."""
    for objects, incident in ((acme, "aaaa00000001"), (globex, "bbbb00000002")):
        slug = objects.tenant.slug
        Server.objects.filter(pk=objects.server.pk).update(
            last_check_ok=False,
            last_check_at=timezone.now(),
            last_check_reason="the command was not found",
            last_check_incident=incident,
            last_check_cause=f"command not found: {slug}-only",
        )
        ToolPin.objects.create(
            server=objects.remote,
            name=f"{slug}_tool",
            offered_hash="new",
            offered_definition={"name": f"{slug}_tool"},
        )
        for outcome, call_incident in (("ok", ""), ("TIMEOUT", f"{incident[:4]}call0001")):
            CallRecord.objects.create(
                at=timezone.now(),
                tenant=objects.tenant,
                key=objects.api_key,
                key_prefix=objects.api_key.prefix,
                meta_tool="use_tool",
                toolbox=objects.toolbox.name,
                server=objects.server.name,
                tool=f"{slug}_call",
                duration_ms=5,
                outcome=outcome,
                incident=call_incident,
            )


@pytest.mark.parametrize("who", ["acme_admin", "acme_viewer"])
def test_a_member_s_dashboard_shows_only_its_tenants(as_user, trouble, who):  # noqa: F811
    page = as_user(who).get("/admin/")
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    html = page.content.decode()
    board = page.context["board"]
    failing = [alert.text for alert in board.alerts if alert.kind == "failing"]
    assert [text.split(" is failing")[0] for text in failing] == ["acme/acme-tools/acme-time"]
    assert "incident <code>aaaa00000001</code>" in html
    assert [name for name, _, _ in board.held] == ["acme/acme-tools/acme-remote"]
    assert board.servers == {"ok": 0, "failing": 1, "unchecked": 1, "total": 2}
    assert board.today["calls"] == 2 and board.today["failed"] == 1
    assert [call.incident for call in board.failures] == ["aaaacall0001"]
    for theirs in ("globex", "bbbb00000002", "bbbbcall0001", "globex_tool"):
        assert theirs not in html
    assert "Tool definitions (1 held)" in html  # the menu counts its tenants' tools only


def test_an_operator_s_dashboard_shows_every_tenant(as_user, trouble):  # noqa: F811
    page = as_user("operator").get("/admin/")
    board = page.context["board"]
    failing = sorted(alert.incident for alert in board.alerts if alert.kind == "failing")
    assert failing == ["aaaa00000001", "bbbb00000002"]
    assert board.held_total == 2 and board.today == {
        "calls": 4,
        "failed": 2,
        "per_meta_tool": [("use_tool", 4)],
    }
    assert "Tool definitions (2 held)" in page.content.decode()


def test_a_member_s_usage_shows_only_its_tenants_and_keys(as_user, trouble, globex):  # noqa: F811
    client = as_user("acme_admin")
    theirs = client.get(USAGE, {"tenant": globex.tenant.pk, "key": globex.api_key.pk})
    assert theirs.status_code == 200
    assert theirs.context["chosen"].slug == "acme" and theirs.context["chosen_key"] is None
    assert [line.name for line in theirs.context["stats"]["tools"]] == [
        "acme-tools/acme-time/acme_call"
    ]
    assert list(theirs.context["keys"]) == list(ApiKey.objects.filter(tenant__slug="acme"))
    assert "globex" not in theirs.content.decode()


def test_an_operator_s_usage_of_one_key(as_user, trouble, globex):  # noqa: F811
    page = as_user("operator").get(USAGE, {"key": globex.api_key.pk, "window": "hour"})
    assert page.context["chosen"] == globex.tenant
    assert page.context["chosen_key"] == globex.api_key
    stats = page.context["stats"]
    assert (stats["calls"], stats["errors"]) == (2, 1)
    assert [(line.name, line.calls) for line in stats["keys"]] == [
        (f"{globex.api_key.prefix} globex-key", 2)
    ]
    assert f"<title>Usage: {globex.tenant}, key {globex.api_key.prefix} |" in (
        page.content.decode()
    )
