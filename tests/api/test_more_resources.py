"""Members, the catalog, tool definitions held for approval, server checks and the per-token
rate limit, each as the roles the admin gives them to."""

from __future__ import annotations

import sys

from django.contrib.admin.models import LogEntry

from accounts.members import NOT_AVAILABLE
from accounts.models import Membership
from tests.api.conftest import problem
from tests.harness.paths import FIXTURE_SERVER
from toolboxes import pins
from toolboxes.models import CatalogEntry, CatalogParameter, Server, ToolPin

VIEWER_WRITE = "Your role in tenant 'acme' is viewer: only its admins may change it."
MEMBERS = "/tenants/acme/members"


def test_members(api, people):
    assert {m["username"] for m in api("acme_viewer")("GET", MEMBERS).json()} == {
        "ada",
        "vic",
        "max",
    }
    problem(
        api("acme_viewer")("POST", MEMBERS, {"username": "zoe", "role": "viewer"}),
        403,
        VIEWER_WRITE,
    )
    problem(api("globex_admin")("GET", MEMBERS), 404, "No tenant 'acme'.")
    added = api("acme_admin")("POST", MEMBERS, {"username": "zoe", "role": "viewer"})
    assert added.status_code == 201 and added.json()["one_time_password"]
    assert LogEntry.objects.get().user == people["acme_admin"]
    # A tenant admin may not attach an existing account (the admin's own rule and text).
    body = problem(
        api("acme_admin")("POST", MEMBERS, {"username": "gus", "role": "viewer"}),
        422,
        "1 invalid field.",
    )
    assert body["errors"] == [{"field": "username", "message": NOT_AVAILABLE}]
    body = problem(
        api("acme_admin")("POST", MEMBERS, {"username": "zoe", "role": "admin"}),
        422,
        "1 invalid field.",
    )
    assert body["errors"] == [
        {"field": "username", "message": "This user is already a member of this tenant."}
    ]
    body = problem(
        api("acme_admin")("POST", MEMBERS, {"username": "no spaces", "role": "viewer"}),
        422,
        "1 invalid field.",
    )
    assert body["errors"][0]["field"] == "username"
    assert body["errors"][0]["message"].startswith("Enter a valid username.")
    operator = api("operator")("POST", MEMBERS, {"username": "gus", "role": "viewer"}).json()
    assert operator["one_time_password"] is None
    changed = api("acme_admin")("PATCH", MEMBERS + "/zoe", {"role": "admin"})
    assert changed.json() == {"username": "zoe", "role": "admin"}
    assert api("acme_admin")("DELETE", MEMBERS + "/zoe").status_code == 204
    assert not Membership.objects.filter(user__username="zoe").exists()
    problem(api("acme_admin")("DELETE", MEMBERS + "/zoe"), 404, "No member 'zoe'.")


def test_the_catalog(api):
    entry = CatalogEntry.objects.create(
        name="io.example/notes", command="notes", env={"T": "{{token}}"}
    )
    CatalogParameter.objects.create(
        entry=entry, name="token", secret=True, default="s3cret-default"
    )
    listed = api("acme_viewer")("GET", "/catalog").json()
    [shown] = [item for item in listed if item["name"] == "io.example/notes"]
    assert shown["parameters"][0] == {
        "name": "token", "description": "", "required": False, "default": None, "choices": [],
        "secret": True,
    }  # fmt: skip
    assert (
        api("acme_viewer")("GET", "/catalog/io.example/notes").json()["name"] == "io.example/notes"
    )
    document = {"catalog": {"time": {"command": "mcp-server-time", "parameters": []}}}
    problem(api("acme_admin")("POST", "/catalog", document), 403, "Only operators may do this.")
    saved = api("operator")("POST", "/catalog", document).json()
    assert [item["name"] for item in saved["entries"]] == ["time"]
    bad = {"catalog": {"web": {"transport": "streamable-http", "parameters": []}}}
    body = problem(api("operator")("POST", "/catalog", bad), 422, "1 invalid field.")
    assert body["errors"] == [{"field": "web.url", "message": "A remote server needs a URL."}]
    made = api("acme_admin")(
        "POST",
        "/tenants/acme/toolboxes/acme-tools/servers",
        {"name": "notes", "catalog": "io.example/notes", "parameters": {"token": "t-123"}},
    )
    assert made.status_code == 201 and made.json()["secret_parameter_names"] == ["token"]
    assert "t-123" not in made.content.decode()
    problem(
        api("operator")("DELETE", "/catalog/io.example/notes"),
        409,
        "Servers are made from catalog entry 'io.example/notes': delete them first.",
    )
    assert api("operator")("DELETE", "/catalog/time").status_code == 204
    problem(api("operator")("GET", "/catalog/time"), 404, "No catalog entry 'time'.")


def test_tool_definitions_held_approved_and_rejected(api, acme, people):
    server = acme.server
    server.pinning = "approve-all"
    server.save()
    tools = [{"name": "now", "description": "The time"}, {"name": "zone", "description": "A zone"}]
    pins.record_offer(server, "fingerprint-1", tools)
    base = "/tenants/acme/toolboxes/acme-tools/servers/acme-time/tools"
    held = api("acme_viewer")("GET", "/tenants/acme/tool-definitions").json()
    assert [(item["tool"], item["status"]) for item in held] == [
        ("now", "held: new"),
        ("zone", "held: new"),
    ]
    assert '+  "description": "The time",' in held[0]["diff"]
    problem(api("acme_viewer")("POST", base + "/now/approve"), 403, VIEWER_WRITE)
    problem(api("globex_admin")("POST", base + "/now/approve"), 404, "No tenant 'acme'.")
    assert api("acme_admin")("POST", base + "/now/approve").json()["status"] == "approved"
    assert api("acme_admin")("POST", base + "/zone/reject").json()["status"] == "rejected"
    problem(api("acme_admin")("POST", base + "/nope/approve"), 404, "No tool definition 'nope'.")
    assert ToolPin.objects.get(name="now").approved_hash
    everything = api("acme_admin")("GET", "/tenants/acme/tool-definitions?status=all").json()
    assert {item["tool"]: item["status"] for item in everything} == {
        "now": "approved",
        "zone": "rejected",
    }
    assert [entry.change_message.split(" (")[0] for entry in LogEntry.objects.order_by("pk")] == [
        "Approved",
        "Rejected",
    ]


def test_a_server_check(api, acme):
    server = Server(
        toolbox=acme.toolbox,
        name="fixture",
        command=sys.executable,
        args=[FIXTURE_SERVER],
        position=5,
    )
    server.full_clean()
    server.save()
    path = "/tenants/acme/toolboxes/acme-tools/servers/fixture"
    problem(api("acme_viewer")("POST", path + "/check"), 403, VIEWER_WRITE)
    result = api("acme_admin")("POST", path + "/check").json()
    assert result["ok"] is True and "echo" in result["tools"], result
    shown = api("acme_viewer")("GET", path).json()
    assert shown["last_check_ok"] is True and shown["last_check_at"]


def test_the_rate_limit_per_token(api, settings):
    settings.WORKBENCH_API_RATE_LIMIT = "3/m"  # each test's tokens are new: counts start at 0
    client, other = api("acme_admin"), api("acme_viewer")
    for _ in range(3):
        assert client("GET", "/me").status_code == 200
    response = client("GET", "/me")
    body = problem(
        response,
        429,
        f"This credential made too many requests; retry in {response['Retry-After']} s.",
    )
    assert 1 <= int(response["Retry-After"]) <= 60 and body["title"] == "Too many requests"
    assert other("GET", "/me").status_code == 200  # another token counts on its own
