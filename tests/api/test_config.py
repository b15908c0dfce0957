"""A tenant's whole configuration over the API: read (secrets as null), applied unchanged
(nothing changes, and a dry run says so), one server changed (exactly that change), a
stale If-Match (409, nothing lost), an invalid document (422 naming its JSON path)."""

from __future__ import annotations

import copy

from django.contrib.admin.models import ADDITION, DELETION, LogEntry

from tests.api.conftest import SECRET, problem
from toolboxes.config_file import export_tenant
from toolboxes.models import CatalogEntry, Server, Toolbox

CONFIG = "/tenants/acme/config"
NOTHING = {"applied": False, "created": [], "changed": [], "deleted": []}


def test_get_answers_the_export_format_without_secrets(api, acme):
    response = api("operator")("GET", CONFIG)
    document = response.json()
    server = document["toolboxes"]["acme-tools"]["mcpServers"]["acme-time"]
    assert server["env"] == {"TOKEN": None} and server["command"] == "mcp-server-time"
    remote = document["toolboxes"]["acme-tools"]["mcpServers"]["acme-remote"]
    assert remote["headers"] == {"Authorization": None}
    assert response["ETag"].startswith('"') and len(response["ETag"]) == 34
    # How a raw server runs is for operators' eyes (tenant admins use the catalog).
    members = api("acme_viewer")("GET", CONFIG)
    server = members.json()["toolboxes"]["acme-tools"]["mcpServers"]["acme-time"]
    assert (server["command"], server["args"], server["env"]) == (None, None, {"TOKEN": None})
    assert members["ETag"] == response["ETag"]


def test_put_unchanged_changes_nothing_and_a_dry_run_says_so(api, acme):
    client = api("acme_admin")
    got = client("GET", CONFIG)
    before = export_tenant(acme.tenant)
    updated = acme.server.updated_at
    for query in ("?dry_run=true", ""):
        answer = client("PUT", CONFIG + query, got.json(), if_match=got["ETag"])
        assert answer.status_code == 200, answer.content
        plan = answer.json()
        assert {key: plan[key] for key in NOTHING} == NOTHING
        assert answer["ETag"] == got["ETag"] == f'"{plan["version"]}"'
    assert export_tenant(acme.tenant) == before
    acme.server.refresh_from_db()
    assert acme.server.updated_at == updated and not LogEntry.objects.exists()


def test_one_server_changed_is_exactly_that_change(api, acme, people):
    client = api("operator")
    got = client("GET", CONFIG)
    document = copy.deepcopy(got.json())
    # Not where it runs (which would need its secret typed again: test_secret_follows_server).
    document["toolboxes"]["acme-tools"]["mcpServers"]["acme-time"]["timeout"] = 9
    dry = client("PUT", CONFIG + "?dry_run=true", document, if_match=got["ETag"]).json()
    expected = [{"name": "acme-tools/acme-time", "fields": ["timeout"]}]
    assert (dry["applied"], dry["changed"], dry["created"], dry["deleted"]) == (
        False,
        expected,
        [],
        [],
    )
    acme.server.refresh_from_db()
    assert acme.server.timeout == 60
    applied = client("PUT", CONFIG, document, if_match=got["ETag"])
    assert applied.json()["applied"] is True and applied.json()["changed"] == expected
    assert applied["ETag"] != got["ETag"] and applied["ETag"] == client("GET", CONFIG)["ETag"]
    acme.server.refresh_from_db()
    assert acme.server.timeout == 9
    assert acme.server.env == {"TOKEN": SECRET}  # the null secret kept its stored value
    tenant_entry, server_entry = LogEntry.objects.order_by("pk")
    assert tenant_entry.user == people["operator"] and tenant_entry.object_repr == str(acme.tenant)
    assert tenant_entry.change_message.startswith(
        "Applied a configuration: changed acme-tools/acme-time (API token wbp_"
    )
    assert (server_entry.object_id, server_entry.user) == (str(acme.server.pk), people["operator"])
    assert server_entry.change_message.startswith("Changed by a configuration: timeout (API token")


def test_created_and_deleted(api, acme, people):
    """Each object made or deleted has its history line; a deleted one as the admin's
    delete records it (content type, id, repr), by the token's owner."""
    old = Toolbox.objects.create(tenant=acme.tenant, name="old", description="Old")
    old_server = Server.objects.create(toolbox=old, name="s", command="s")
    client = api("operator")
    document = client("GET", CONFIG).json()
    del document["toolboxes"]["old"]
    servers = document["toolboxes"]["acme-tools"]["mcpServers"]
    del servers["acme-remote"]
    servers["git"] = {"command": "mcp-server-git", "env": {"GIT": "x"}}
    document["toolboxes"]["ops"] = {"description": "Ops", "mcpServers": {}}
    plan = client("PUT", CONFIG, document).json()
    assert plan["created"] == ["ops", "acme-tools/git"]
    assert plan["deleted"] == ["old", "acme-tools/acme-remote", "old/s"]
    added = LogEntry.objects.filter(action_flag=ADDITION).values_list("object_repr", flat=True)
    assert sorted(added) == ["acme/ops", "git"]
    deleted = {
        (entry.content_type.model, entry.object_id, entry.object_repr, entry.user)
        for entry in LogEntry.objects.filter(action_flag=DELETION)
    }
    assert deleted == {
        ("toolbox", str(old.pk), "acme/old", people["operator"]),
        ("server", str(acme.remote.pk), "acme-remote", people["operator"]),
        ("server", str(old_server.pk), "s", people["operator"]),
    }
    assert (
        LogEntry.objects.filter(action_flag=DELETION)
        .first()
        .change_message.startswith("Deleted by a configuration (API token wbp_")
    )


def test_a_stale_if_match_is_409_and_nothing_is_lost(api, acme):
    first, second = api("acme_admin"), api("operator")
    seen = first("GET", CONFIG)
    mine = copy.deepcopy(seen.json())
    mine["toolboxes"]["acme-tools"]["description"] = "mine"
    theirs = copy.deepcopy(seen.json())
    theirs["toolboxes"]["acme-tools"]["mcpServers"]["acme-time"]["timeout"] = 9
    assert second("PUT", CONFIG, theirs, if_match=seen["ETag"]).json()["applied"] is True
    now = first("GET", CONFIG)["ETag"].strip('"')
    stale = seen["ETag"].strip('"')
    problem(
        first("PUT", CONFIG, mine, if_match=seen["ETag"]),
        409,
        f"The configuration changed since version {stale} was read (now {now}): read it "
        "again, then apply your change to it.",
    )
    acme.toolbox.refresh_from_db()
    acme.server.refresh_from_db()
    assert acme.toolbox.description == "tools" and acme.server.timeout == 9


def test_invalid_documents_name_their_path(api, acme):
    client = api("acme_admin")
    document = client("GET", CONFIG).json()
    document["toolboxes"]["acme-tools"]["mcpServers"]["acme-time"]["args"] = [1]
    body = problem(client("PUT", CONFIG, document), 422, "The configuration is not valid.")
    assert body["errors"] == [
        {
            "field": "toolboxes.acme-tools.mcpServers.acme-time.args[0]",
            "message": "must be a string",
        }
    ]
    document = client("GET", CONFIG).json()
    document["toolboxes"]["acme-tools"]["mcpServers"]["new"] = {"command": "x", "env": {"K": None}}
    body = problem(client("PUT", CONFIG, document), 422, "The configuration is not valid.")
    assert body["errors"] == [
        {
            "field": "toolboxes.acme-tools.mcpServers.new.env.K",
            "message": "has no stored value to keep",
        }
    ]
    assert export_tenant(acme.tenant)["toolboxes"]["acme-tools"]["mcpServers"].keys() == {
        "acme-time",
        "acme-remote",
    }


def test_viewers_and_other_tenants_may_not_put(api, acme):
    document = api("acme_admin")("GET", CONFIG).json()
    problem(
        api("acme_viewer")("PUT", CONFIG, document),
        403,
        "Your role in tenant 'acme' is viewer: only its admins may change it.",
    )
    problem(api("globex_admin")("PUT", CONFIG, document), 404, "No tenant 'acme'.")


def test_a_tenant_admins_document(api, acme):
    """Applied unchanged (the nulls keep how raw servers run), a catalog server made and a
    raw server's filters changed; a raw server made or changed in how it runs: 403."""
    CatalogEntry.objects.create(name="time", command="mcp-server-time")
    client = api("acme_admin")
    got = client("GET", CONFIG)
    unchanged = client("PUT", CONFIG, got.json(), if_match=got["ETag"]).json()
    assert {key: unchanged[key] for key in NOTHING} == NOTHING
    document = copy.deepcopy(got.json())
    servers = document["toolboxes"]["acme-tools"]["mcpServers"]
    servers["clock"] = {"catalog": "time"}
    servers["acme-time"]["toolFilters"] = ["get_current_time"]
    plan = client("PUT", CONFIG, document).json()
    assert plan["created"] == ["acme-tools/clock"]
    assert plan["changed"] == [{"name": "acme-tools/acme-time", "fields": ["toolFilters"]}]
    before = export_tenant(acme.tenant)
    for change in (
        {"sh": {"command": "/bin/sh", "args": ["-c", "id"]}},
        {"acme-time": {**servers["acme-time"], "args": ["--local-timezone=UTC"]}},
        {"acme-time": {**servers["acme-time"], "env": {"TOKEN": None, "LD_PRELOAD": "x"}}},
    ):
        attempt = copy.deepcopy(client("GET", CONFIG).json())
        attempt["toolboxes"]["acme-tools"]["mcpServers"].update(change)
        [name] = change
        problem(
            client("PUT", CONFIG, attempt),
            403,
            f"Only operators may make a raw server or change how one runs: acme-tools/{name}. "
            "Tenant admins make servers from the catalog.",
        )
    assert export_tenant(acme.tenant) == before


def test_a_toolbox_switched_off_as_a_server_of_its_own_is_a_named_change(api, acme):
    """`offeredAlone` is written only when off; a PUT turning it off (or on) names it in
    the plan, a dry run writes nothing, and the API's toolbox says it too."""
    client = api("acme_admin")
    got = client("GET", CONFIG)
    box = got.json()["toolboxes"]["acme-tools"]
    assert "offeredAlone" not in box  # on, the default: not written
    document = copy.deepcopy(got.json())
    document["toolboxes"]["acme-tools"] = {
        "description": box["description"],
        "offeredAlone": False,
        "mcpServers": box["mcpServers"],
    }
    dry = client("PUT", CONFIG + "?dry_run=true", document, if_match=got["ETag"]).json()
    expected = [{"name": "acme-tools", "fields": ["offeredAlone"]}]
    assert (dry["applied"], dry["changed"]) == (False, expected)
    assert Toolbox.objects.get(tenant=acme.tenant, name="acme-tools").offered_alone
    applied = client("PUT", CONFIG, document, if_match=got["ETag"])
    assert applied.json()["changed"] == expected
    assert not Toolbox.objects.get(tenant=acme.tenant, name="acme-tools").offered_alone
    again = client("GET", CONFIG)
    assert again.json()["toolboxes"]["acme-tools"]["offeredAlone"] is False
    shown = client("GET", "/tenants/acme/toolboxes/acme-tools").json()
    assert shown["offered_alone"] is False

    del document["toolboxes"]["acme-tools"]["offeredAlone"]  # left out: on again
    back = client("PUT", CONFIG, document, if_match=again["ETag"]).json()
    assert back["changed"] == expected
    assert Toolbox.objects.get(tenant=acme.tenant, name="acme-tools").offered_alone


def test_the_api_switches_a_toolbox_off_as_a_server_of_its_own(api, acme):
    client = api("acme_admin")
    base = "/tenants/acme/toolboxes"
    made = client("POST", base, {"name": "big", "description": "Big", "offered_alone": False})
    assert made.status_code == 201 and made.json()["offered_alone"] is False
    kept = client("PATCH", base + "/big", {"description": "Bigger"}).json()
    assert kept["offered_alone"] is False  # left out: kept
    on = client("PATCH", base + "/big", {"offered_alone": True}).json()
    assert on["offered_alone"] is True
    assert Toolbox.objects.get(tenant=acme.tenant, name="big").offered_alone
    plain = client("POST", base, {"name": "small", "description": "Small"}).json()
    assert plain["offered_alone"] is True  # on by default
