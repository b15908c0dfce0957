"""Every list of the API a page at a time (api.pages): its pages, of any size, hold each
row once and in the list's order; a cursor it did not give, or a limit out of bounds, is a
422 naming the field."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from accounts.models import Membership
from api.pages import BAD_CURSOR
from tests.api.conftest import problem
from toolboxes import pins
from toolboxes.models import ApiKey, CatalogEntry, Server, Tenant, Toolbox

SERVERS = "/tenants/acme/toolboxes/acme-tools/servers"
# path -> (the field naming an item, the items in the list's order), as the operator sees it
LISTS: dict[str, tuple[str, list[str]]] = {
    "/tenants": ("slug", ["acme", "globex", "initech"]),
    "/tenants/acme/toolboxes": ("name", ["acme-tools", "b-tools", "c-tools"]),
    SERVERS: ("name", ["acme-time", "acme-remote", "zeta"]),  # zeta: position 1 too
    "/tenants/acme/keys": ("label", ["k2", "k1", "acme-key"]),  # newest first
    "/tenants/acme/members": ("username", ["ada", "max", "vic"]),
    "/tenants/acme/tool-definitions?status=all": ("tool", ["a", "b", "c"]),
    "/catalog": ("name", ["a.example/one", "b.example/two", "c.example/three"]),
}


@pytest.fixture
def rows(acme, people) -> None:
    """Three rows in every list (the call log's pages: tests/api/test_calls.py)."""
    Tenant.objects.create(slug="initech")
    for name in ("c-tools", "b-tools"):
        Toolbox.objects.create(tenant=acme.tenant, name=name, description=name)
    zeta = Server(toolbox=acme.toolbox, name="zeta", command="zeta", position=1)
    zeta.full_clean()
    zeta.save()
    for label in ("k1", "k2"):
        ApiKey.issue(acme.tenant, label=label)
    pins.record_offer(acme.server, "f1", [{"name": "b"}, {"name": "c"}])
    pins.record_offer(acme.remote, "f2", [{"name": "a"}])
    for name in ("c.example/three", "a.example/one", "b.example/two"):
        CatalogEntry.objects.create(name=name, command="x")
    assert Membership.objects.filter(tenant=acme.tenant).count() == 3


def walk(client: Any, path: str, limit: int) -> list[dict[str, Any]]:
    """Every item of a list, page by page."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = f"{'&' if '?' in path else '?'}limit={limit}"
        body = client("GET", path + query + (f"&cursor={cursor}" if cursor else "")).json()
        assert len(body["items"]) <= limit and (body["items"] or not items), body
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items


@pytest.mark.parametrize("path", LISTS)
def test_pages_hold_every_row_once_in_order(api, rows, path):
    field, names = LISTS[path]
    client = api("operator")
    whole = client("GET", path).json()
    assert whole["next_cursor"] is None
    assert [item[field] for item in whole["items"]] == names
    assert walk(client, path, 1) == walk(client, path, 2) == whole["items"]


def cursor_of(key: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode()


def test_a_cursor_not_ours_is_422(api, rows):
    client = api("acme_viewer")
    forged = [(path, "nonsense") for path in [*LISTS, "/tenants/acme/calls"]] + [
        # well-formed, but not a key of the list: wrong length, type, range, or naive
        (SERVERS, cursor_of([0])),
        (SERVERS, cursor_of(["x", 1])),
        (SERVERS, cursor_of([0, 10**30])),
        (SERVERS, cursor_of([0, True])),
        ("/tenants", cursor_of(["a\x00"])),
        ("/tenants/acme/tool-definitions", cursor_of([{"a": 1}, "x", "y"])),
        ("/tenants/acme/calls", cursor_of(["yesterday", 1])),
        ("/tenants/acme/calls", cursor_of(["2026-01-01T00:00:00", 1])),
    ]
    for path, cursor in forged:
        joined = "&" if "?" in path else "?"
        body = problem(client("GET", f"{path}{joined}cursor={cursor}"), 422, "1 invalid field.")
        assert body["errors"] == [{"field": "cursor", "message": BAD_CURSOR}], path


def test_the_limits_bounds(api, rows):
    client = api("acme_viewer")
    for limit, message in (
        (0, "Input should be greater than or equal to 1"),
        (201, "Input should be less than or equal to 200"),
    ):
        body = problem(
            client("GET", f"/tenants/acme/members?limit={limit}"), 422, "1 invalid field."
        )
        assert body["errors"] == [{"field": "limit", "message": message}]
    assert len(client("GET", "/tenants/acme/members?limit=200").json()["items"]) == 3
