"""A key's own limits through the API: read with the key, set when it is made or changed,
by the same rule as the admin's (a tenant's admin at most the installation's: 403)."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry

from tests.api.conftest import problem

ABOVE = "Only an operator may set this above the installation's WORKBENCH_KEY_RATE_LIMIT = 50."
LIFT = "Only an operator may lift a key's limit (0: no limit)."


pytestmark = pytest.mark.usefixtures("key_limits_of_the_installation")


def test_a_key_reads_its_own_limits_null_by_default(api, acme):
    body = api("acme_viewer")("GET", f"/tenants/acme/keys/{acme.api_key.prefix}").json()
    assert [body[name] for name in ("rate_limit", "rate_burst")] == [None, None]
    assert [body[name] for name in ("open_rate_limit", "open_rate_burst")] == [None, None]


def test_a_tenant_admin_lowers_a_key_and_it_is_recorded(api, acme):
    path = f"/tenants/acme/keys/{acme.api_key.prefix}"
    body = api("acme_admin")("PATCH", path, {"rate_limit": 0.5, "rate_burst": 2}).json()
    assert (body["rate_limit"], body["rate_burst"], body["label"]) == (0.5, 2, "acme-key")
    acme.api_key.refresh_from_db()
    assert (acme.api_key.rate_limit, acme.api_key.rate_burst) == (0.5, 2)
    entry = LogEntry.objects.order_by("-pk").first()
    assert entry.change_message.startswith("Changed rate_burst, rate_limit (API token")
    # null: back to the installation's.
    body = api("acme_admin")("PATCH", path, {"rate_limit": None}).json()
    assert (body["rate_limit"], body["rate_burst"]) == (None, 2)


def test_a_tenant_admin_may_not_raise_a_key(api, acme):
    path = f"/tenants/acme/keys/{acme.api_key.prefix}"
    body = problem(api("acme_admin")("PATCH", path, {"rate_limit": 51}), 403, ABOVE)
    assert body["errors"] == [{"field": "rate_limit", "message": ABOVE}]
    problem(api("acme_admin")("PATCH", path, {"open_rate_limit": 0}), 403, LIFT)
    problem(
        api("acme_admin")("POST", "/tenants/acme/keys", {"label": "x", "rate_limit": 60}),
        403,
        ABOVE,
    )
    acme.api_key.refresh_from_db()
    assert acme.api_key.rate_limit is None and acme.tenant.api_keys.count() == 1


def test_an_operator_raises_or_lifts_a_key(api, acme):
    path = f"/tenants/acme/keys/{acme.api_key.prefix}"
    body = api("operator")("PATCH", path, {"rate_limit": 500, "open_rate_limit": 0}).json()
    assert (body["rate_limit"], body["open_rate_limit"]) == (500, 0)
    created = api("operator")("POST", "/tenants/acme/keys", {"rate_limit": 0, "rate_burst": 9})
    assert created.status_code == 201 and created.json()["rate_burst"] == 9


def test_a_viewer_may_not_and_bounds_are_422(api, acme):
    path = f"/tenants/acme/keys/{acme.api_key.prefix}"
    problem(
        api("acme_viewer")("PATCH", path, {"rate_limit": 1}),
        403,
        "Your role in tenant 'acme' is viewer: only its admins may change it.",
    )
    body = problem(api("operator")("PATCH", path, {"rate_burst": 0}), 422, "1 invalid field.")
    [error] = body["errors"]
    assert error["field"].endswith("rate_burst")
    assert error["message"] == "Input should be greater than or equal to 1"
    problem(api("operator")("PATCH", path, {"burst": 1}), 422, "1 invalid field.")
