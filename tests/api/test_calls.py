"""The call log over the API: newest first, a page at a time by cursor, filtered, scoped."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from calls.models import CallRecord
from tests.api.conftest import problem


def calls(tenant, count: int) -> list[CallRecord]:
    start = timezone.now() - timedelta(minutes=count)
    return CallRecord.objects.bulk_create(
        CallRecord(
            tenant=tenant,
            at=start + timedelta(seconds=index // 2),  # pairs share a time: the id breaks ties
            meta_tool="use_tool",
            toolbox="acme-tools",
            server="acme-time" if index % 3 else "acme-remote",
            tool="get_current_time",
            outcome="ok" if index % 4 else "tool_error",
            duration_ms=1.0,
        )
        for index in range(count)
    )


def test_pages_by_cursor_cover_every_call_once(api, acme, globex):
    made = calls(acme.tenant, 25)
    calls(globex.tenant, 3)
    client = api("acme_viewer")
    seen, cursor = [], None
    while True:
        query = "?limit=10" + (f"&cursor={cursor}" if cursor else "")
        page = client("GET", f"/tenants/acme/calls{query}").json()
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    newest_first = sorted(made, key=lambda row: (row.at, row.pk), reverse=True)
    assert seen == [row.pk for row in newest_first]


def test_filters(api, acme):
    made = calls(acme.tenant, 12)
    client = api("acme_admin")
    remote = client("GET", "/tenants/acme/calls?server=acme-remote").json()["items"]
    assert len(remote) == len([row for row in made if row.server == "acme-remote"])
    errors = client("GET", "/tenants/acme/calls?outcome=tool_error&server=acme-remote").json()
    assert {(item["outcome"], item["server"]) for item in errors["items"]} == {
        ("tool_error", "acme-remote")
    }


def test_a_cursor_not_ours_and_a_page_too_large(api, acme):
    client = api("acme_admin")
    body = problem(client("GET", "/tenants/acme/calls?cursor=nonsense"), 422, "1 invalid field.")
    assert body["errors"] == [{"field": "cursor", "message": "is not a cursor this API gave"}]
    body = problem(client("GET", "/tenants/acme/calls?limit=1000"), 422, "1 invalid field.")
    assert body["errors"][0]["field"] == "limit"
    problem(api("globex_admin")("GET", "/tenants/acme/calls"), 404, "No tenant 'acme'.")


def test_usage(api, acme):
    made = calls(acme.tenant, 12)
    body = api("acme_viewer")("GET", "/tenants/acme/usage?window=week").json()
    errors = sum(1 for row in made if row.outcome != "ok")
    assert (body["window"], body["calls"], body["errors"]) == ("week", 12, errors)
    assert {line["name"] for line in body["servers"]} == {
        "acme-tools/acme-time",
        "acme-tools/acme-remote",
    }
    body = problem(
        api("acme_viewer")("GET", "/tenants/acme/usage?window=year"), 422, "1 invalid field."
    )
    assert body["errors"][0]["field"] == "window"
