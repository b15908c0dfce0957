"""Each resource as each role: what the admin lets them see and change, another tenant's
object a 404, a viewer's write a 403, invalid input a 422 with the admin's messages, and
every change in the object's admin history with the token's owner as actor."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.urls import reverse

from tests.api.conftest import SECRET, problem
from toolboxes.models import ApiKey, CatalogEntry, Server, Tenant, Toolbox

VIEWER_WRITE = "Your role in tenant 'acme' is viewer: only its admins may change it."
TOOLS = "/tenants/acme/toolboxes"
SERVERS = TOOLS + "/acme-tools/servers"

# (method, path, body) of one write per resource, each allowed to acme's admins.
WRITES = [
    ("POST", TOOLS, {"name": "ops", "description": "Ops tools"}),
    ("PATCH", TOOLS + "/acme-tools", {"description": "changed"}),
    ("DELETE", TOOLS + "/acme-tools", None),
    ("POST", SERVERS, {"name": "git", "catalog": "time"}),
    ("PATCH", SERVERS + "/acme-time", {"timeout": 30}),
    ("PUT", SERVERS + "/acme-time/tool-filters", {"tool_filters": ["get_current_time"]}),
    ("DELETE", SERVERS + "/acme-time", None),
    ("POST", "/tenants/acme/keys", {"label": "ci"}),
]
READS = [
    "/tenants/acme",
    TOOLS,
    TOOLS + "/acme-tools",
    SERVERS,
    SERVERS + "/acme-time",
    "/tenants/acme/keys",
    "/tenants/acme/keys/{key}",
    "/tenants/acme/calls",
    "/tenants/acme/usage",
    "/tenants/acme/members",
    "/tenants/acme/tool-definitions",
    "/tenants/acme/config",
]
# Every other request naming one of acme's objects: another tenant's admin finds none.
FOREIGN = [
    ("PATCH", "/tenants/acme", {"name": "mine"}),
    ("POST", "/tenants/acme/keys/{key}/revoke", None),
    ("PATCH", "/tenants/acme/keys/{key}", {"rate_limit": 1}),
    ("POST", SERVERS + "/acme-time/check", None),
    ("POST", SERVERS + "/acme-time/tools/get_current_time/approve", None),
    ("POST", SERVERS + "/acme-time/tools/get_current_time/reject", None),
    ("POST", "/tenants/acme/members", {"username": "zed", "role": "viewer"}),
    ("PATCH", "/tenants/acme/members/vic", {"role": "admin"}),
    ("DELETE", "/tenants/acme/members/vic", None),
    ("PUT", "/tenants/acme/config", {"toolboxes": {}}),
]


@pytest.fixture(autouse=True)
def catalog(db):
    """An entry tenant admins make servers from."""
    return CatalogEntry.objects.create(name="time", command="mcp-server-time")


def last_entry() -> LogEntry:
    return LogEntry.objects.order_by("-pk").first()


@pytest.mark.parametrize("path", READS)
def test_members_read_their_tenant_and_others_get_404(api, acme, path):
    path = path.format(key=acme.api_key.prefix)
    for who in ("operator", "acme_admin", "acme_viewer", "mixed"):
        assert api(who)("GET", path).status_code == 200, who
    problem(api("globex_admin")("GET", path), 404, "No tenant 'acme'.")


@pytest.mark.parametrize(("method", "path", "body"), FOREIGN)
def test_every_other_request_for_another_tenants_object_is_404(api, acme, method, path, body):
    path = path.format(key=acme.api_key.prefix)
    problem(api("globex_admin")(method, path, body), 404, "No tenant 'acme'.")
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_a_viewers_write_is_403_and_another_tenants_404(api, method, path, body):
    problem(api("acme_viewer")(method, path, body), 403, VIEWER_WRITE)
    problem(api("globex_admin")(method, path, body), 404, "No tenant 'acme'.")
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_admins_and_operators_write_and_it_is_recorded(api, people, method, path, body):
    who = "acme_admin" if "tool-filters" not in path else "operator"
    response = api(who)(method, path, body)
    assert response.status_code in (200, 201, 204), response.content
    entry = last_entry()
    assert entry.user == people[who]
    assert entry.action_flag == {"POST": ADDITION, "DELETE": DELETION}.get(method, CHANGE)
    assert entry.change_message.endswith(f"(API token wbp_{api(who).token[4:12]}_… ({who}'s)).")


def test_the_tenant_list_is_scoped(api):
    slugs = lambda who: [t["slug"] for t in api(who)("GET", "/tenants").json()["items"]]  # noqa: E731
    assert slugs("operator") == ["acme", "globex"]
    assert slugs("acme_viewer") == ["acme"]
    assert slugs("mixed") == ["acme", "globex"]


def test_only_operators_make_and_change_tenants(api):
    problem(
        api("acme_admin")("POST", "/tenants", {"slug": "initech"}),
        403,
        "Only operators may do this.",
    )
    problem(
        api("acme_admin")("PATCH", "/tenants/acme", {"name": "x"}),
        403,
        "Only operators may do this.",
    )
    created = api("operator")("POST", "/tenants", {"slug": "initech", "name": "Initech"})
    assert created.status_code == 201 and created.json()["slug"] == "initech"
    problem(
        api("operator")("POST", "/tenants", {"slug": "initech"}),
        409,
        "A tenant 'initech' exists already.",
    )
    changed = api("operator")("PATCH", "/tenants/initech", {"active": False})
    assert changed.json()["active"] is False and not Tenant.objects.get(slug="initech").is_active
    assert last_entry().change_message.startswith("Changed is_active (API token")


def test_a_viewer_of_one_tenant_admin_of_another(api):
    assert api("mixed")("POST", TOOLS, {"name": "ops", "description": "x"}).status_code == 201
    response = api("mixed")(
        "POST", "/tenants/globex/toolboxes", {"name": "ops", "description": "x"}
    )
    problem(response, 403, "Your role in tenant 'globex' is viewer: only its admins may change it.")


def test_unknown_objects_are_404(api):
    client = api("acme_admin")
    problem(client("GET", TOOLS + "/nope"), 404, "No toolbox 'nope'.")
    problem(client("GET", SERVERS + "/nope"), 404, "No server 'nope'.")
    problem(client("GET", "/tenants/acme/keys/zzzzzzzz"), 404, "No API key 'zzzzzzzz'.")
    problem(client("GET", "/tenants/nope"), 404, "No tenant 'nope'.")


def test_invalid_input_gives_the_admins_messages(api):
    client = api("operator")
    body = problem(
        client("POST", TOOLS, {"name": "acme-tools", "description": "again"}),
        422,
        "1 invalid field.",
    )
    assert body["errors"] == [
        {"field": "", "message": "This tenant already has a toolbox of this name."}
    ]
    body = problem(
        client("POST", SERVERS, {"name": "web", "transport": "streamable-http"}),
        422,
        "1 invalid field.",
    )
    assert body["errors"] == [{"field": "url", "message": "A remote server needs a URL."}]
    body = problem(
        client("POST", SERVERS, {"name": "bad name!", "command": "x", "url": "https://e.com"}),
        422,
        "2 invalid fields.",
    )
    fields = {error["field"] for error in body["errors"]}
    assert fields == {"name", "url"}
    assert {"field": "url", "message": "Only remote servers have a URL."} in body["errors"]
    body = problem(client("POST", SERVERS, {"name": "x", "timeout": 0}), 422, "1 invalid field.")
    assert body["errors"][0]["field"] == "timeout"
    body = problem(
        client("POST", SERVERS, {"name": "x", "command": "y", "colour": 1}), 422, "1 invalid field."
    )
    assert body["errors"] == [{"field": "colour", "message": "Extra inputs are not permitted"}]
    body = problem(
        client("POST", SERVERS, {"name": "x", "catalog": "nope"}), 422, "1 invalid field."
    )
    assert body["errors"] == [{"field": "catalog", "message": "No catalog entry 'nope'."}]


def test_tenant_admins_make_servers_from_the_catalog_only(api, acme):
    """As in the admin (TenantServerForm): how a raw server runs is for operators."""
    client = api("acme_admin")
    problem(
        client("POST", SERVERS, {"name": "sh", "command": "/bin/sh", "args": ["-c", "id"]}),
        403,
        "Only operators may set command, args: tenant admins make servers from the catalog.",
    )
    body = problem(client("POST", SERVERS, {"name": "x"}), 422, "1 invalid field.")
    assert body["errors"] == [{"field": "catalog", "message": "This field is required."}]
    problem(
        client("PATCH", SERVERS + "/acme-remote", {"url": "https://evil.example/mcp"}),
        403,
        "Only operators may set url: tenant admins make servers from the catalog.",
    )
    problem(
        client("PATCH", SERVERS + "/acme-time", {"catalog": "time"}),
        403,
        "Server 'acme-time' is a raw server: only operators may change how it runs.",
    )
    shown = client("GET", SERVERS + "/acme-time").json()
    assert (shown["command"], shown["args"], shown["cwd"], shown["url"]) == (None,) * 4
    assert api("operator")("GET", SERVERS + "/acme-time").json()["command"] == "mcp-server-time"
    assert client("PATCH", SERVERS + "/acme-time", {"enabled": False}).status_code == 200


def test_server_secrets_are_write_only(api, acme):
    client = api("operator")
    shown = client("GET", SERVERS + "/acme-time").json()
    assert shown["env_names"] == ["TOKEN"] and "env" not in shown
    remote = client("GET", SERVERS + "/acme-remote").json()
    assert remote["header_names"] == ["Authorization"] and "headers" not in remote
    # A name given with null keeps its value; one added is set; one left out is removed.
    changed = client("PATCH", SERVERS + "/acme-time", {"env": {"TOKEN": None, "MODE": "fast"}})
    assert changed.json()["env_names"] == ["MODE", "TOKEN"]
    acme.server.refresh_from_db()
    assert acme.server.env == {"TOKEN": SECRET, "MODE": "fast"}
    assert "env" in last_entry().change_message and SECRET not in last_entry().change_message
    body = problem(
        client("PATCH", SERVERS + "/acme-time", {"env": {"NEW": None}}), 422, "1 invalid field."
    )
    assert body["errors"] == [{"field": "env.NEW", "message": "has no stored value to keep"}]
    client("PATCH", SERVERS + "/acme-time", {"timeout": 5})  # env not given: kept
    acme.server.refresh_from_db()
    assert acme.server.env["TOKEN"] == SECRET and acme.server.timeout == 5


def test_an_idle_timeout_set_and_unset(api, acme):
    client = api("acme_admin")
    assert (
        client("PATCH", SERVERS + "/acme-time", {"idle_timeout": 30}).json()["idle_timeout"] == 30
    )
    assert (
        client("PATCH", SERVERS + "/acme-time", {"idle_timeout": None}).json()["idle_timeout"]
        is None
    )
    acme.server.refresh_from_db()
    assert acme.server.idle_timeout is None


def test_tool_filters(api, acme):
    client = api("acme_admin")
    response = client(
        "PUT", SERVERS + "/acme-time/tool-filters", {"tool_filters": ["get_current_time"]}
    )
    assert response.json()["tool_filters"] == ["get_current_time"]
    acme.server.refresh_from_db()
    assert acme.server.tool_filters == ["get_current_time"]


def test_keys_created_once_listed_without_the_key_and_revoked(api, acme):
    client = api("acme_admin")
    created = client("POST", "/tenants/acme/keys", {"label": "ci", "toolboxes": ["acme-tools"]})
    assert created.status_code == 201
    body = created.json()
    key = ApiKey.objects.get(prefix=body["prefix"])
    assert key.matches(body["key"]) and body["toolboxes"] == ["acme-tools"]
    listing = client("GET", "/tenants/acme/keys").text
    assert body["key"] not in listing and body["prefix"] in listing
    assert "key" not in client("GET", f"/tenants/acme/keys/{key.prefix}").json()
    revoked = client("POST", f"/tenants/acme/keys/{key.prefix}/revoke")
    assert revoked.json()["status"] == "revoked"
    assert last_entry().change_message.startswith("Revoked (API token")
    body = problem(
        client("POST", "/tenants/acme/keys", {"toolboxes": ["nope"]}), 422, "1 invalid field."
    )
    assert body["errors"] == [{"field": "toolboxes", "message": "No toolbox 'nope'."}]


def test_deleting_a_toolbox_deletes_its_servers(api, acme, people):
    assert api("acme_admin")("DELETE", TOOLS + "/acme-tools").status_code == 204
    entry = last_entry()  # as the admin's delete records it
    assert (entry.action_flag, entry.content_type.model, entry.user) == (
        DELETION,
        "toolbox",
        people["acme_admin"],
    )
    assert (entry.object_id, entry.object_repr) == (str(acme.toolbox.pk), "acme/acme-tools")
    assert not Toolbox.objects.filter(pk=acme.toolbox.pk).exists()
    assert not Server.objects.filter(toolbox_id=acme.toolbox.pk).exists()


def test_changes_show_in_the_objects_admin_history(api, acme, as_user):
    api("acme_admin")("PATCH", SERVERS + "/acme-time", {"timeout": 30})
    history = reverse("admin:toolboxes_server_history", args=[acme.server.pk])
    page = as_user("acme_viewer").get(history).content.decode()
    assert "Changed timeout (API token wbp_" in page and "ada" in page
