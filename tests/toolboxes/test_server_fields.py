"""The description of a server's fields (`toolboxes.server_fields`) against the model and
each of its consumers: a field missing from one of them fails here, not silently (a field
left out of the admin's groups is not shown; one left out of the export is lost)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api.config_document import RAW_CHANGES, RAW_KEYS
from api.routes.servers import NULLABLE, RAW_FIELDS
from api.schemas import ServerIn, ServerOut
from mcp_gateway.database.reads import load_tenant
from mcp_gateway.snapshots.servers import ServerConfig
from toolboxes.admin.server_layout import server_fieldsets
from toolboxes.admin.servers import ServerAdmin
from toolboxes.config_file import desktop_server, export_server
from toolboxes.launch import SANDBOX_FIELDS
from toolboxes.models import CatalogEntry, CatalogParameter, Server, Tenant, Toolbox
from toolboxes.server_fields import (
    FILE_KEYS,
    LIMIT_KEYS,
    SECTIONS,
    SERVER_FIELDS,
    SNAPSHOT_READS,
    names,
    section_rows,
)

# What a snapshot names besides ServerConfig's attributes (`ServerField.snapshot`).
SNAPSHOT_WORDS = {"launch", "order", "presence", "toolbox"}
ON_THE_PAGE = ("head", "record")  # the server page's own groups (ServerAdmin.head, tail)


def flat(fieldsets: list[Any]) -> list[str]:
    found: list[str] = []
    for _, options in fieldsets:
        for row in options["fields"]:
            found += list(row) if isinstance(row, tuple) else [row]
    return found


def test_every_field_of_the_model_is_in_the_table_once():
    model = [field.name for field in Server._meta.concrete_fields]
    table = [field.name for field in SERVER_FIELDS]
    assert sorted(table) == sorted(model)
    assert len(set(table)) == len(table)


def test_each_entry_says_something_its_consumers_understand():
    attributes = {field.name for field in dataclasses.fields(ServerConfig)}
    for field in SERVER_FIELDS:
        assert field.section in (*SECTIONS, None), field.name
        if field.secret:  # answered by name only, or not at all to others than operators
            assert field.answer != field.api or field.hidden, field.name
        assert set(field.snapshot) <= attributes | SNAPSHOT_WORDS, field.name


# --- the admin ----------------------------------------------------------------------


def test_the_operators_forms_show_every_field_of_a_group():
    shown = {field.form for field in SERVER_FIELDS if field.section is not None}
    page = flat(server_fieldsets(True, "check_status", ServerAdmin.head))
    add = flat(server_fieldsets(True, None, ServerAdmin.head))
    for form in (page, add):
        assert shown <= {*form, *flat([(None, {"fields": ServerAdmin.tail})])}
    inline = flat(server_fieldsets(True, "check_status", [], inline=True))
    on_the_page = {field.form for field in SERVER_FIELDS if field.section in ON_THE_PAGE}
    assert shown - on_the_page <= set(inline)


def test_a_tenants_form_shows_what_is_not_raw_and_nothing_raw():
    form = set(flat(server_fieldsets(False, "check_status", [])))
    raw = {field.form for field in SERVER_FIELDS if field.raw}
    everyone = {
        field.form
        for field in SERVER_FIELDS
        if field.section not in (None, *ON_THE_PAGE) and not field.raw
    }
    assert everyone <= form
    assert not raw & form


def test_a_groups_fields_are_in_the_tables_order_with_those_beside_on_one_line():
    assert section_rows("tools") == ["tool_filters", ("timeout", "idle_timeout"), "pinning"]
    assert section_rows("first")[0] == ("name", "position")  # enabled joins it on an add form
    assert section_rows("catalog") == ["catalog_entry", "parameter_values"]


# --- the configuration file ---------------------------------------------------------


@pytest.fixture
def toolbox(db: None) -> Toolbox:
    tenant = Tenant.objects.create(slug="acme")
    return Toolbox.objects.create(tenant=tenant, name="dev", description="Dev")


def every_way_set(toolbox: Toolbox) -> list[Server]:
    """A stdio server, a remote one signed in with OAuth and a catalog-made one, each with
    every field of the file set to other than its default."""
    common: dict[str, Any] = {
        "tool_filters": ["a"],
        "timeout": 5,
        "idle_timeout": 30,
        "pinning": "off",
        "enabled": False,
    }
    stdio = Server.objects.create(
        toolbox=toolbox, name="local", command="tool", args=["-v"], env={"K": "v"},
        cwd="/srv", mounts=[{"path": "/srv"}], network=False, egress_allow=["10.0.0.0/8"],
        host_ports=["127.0.0.1:8080"], memory_limit_mb=1, process_limit=2,
        cpu_limit_seconds=3, open_files_limit=4, **common,
    )  # fmt: skip
    remote = Server.objects.create(
        toolbox=toolbox, name="remote", position=1, transport="streamable-http",
        url="https://example.org/mcp", headers={"X-K": "v"}, auth="oauth_shared",
        oauth_client={"client_id": "id", "client_secret": "s"}, oauth_scopes="read", **common,
    )  # fmt: skip
    entry = CatalogEntry.objects.create(name="weather", command="uvx", args=["w", "{{key}}"])
    CatalogParameter.objects.create(entry=entry, name="units")
    CatalogParameter.objects.create(entry=entry, name="key", secret=True)
    made = Server.objects.create(
        toolbox=toolbox, name="made", position=2, catalog_entry=entry,
        parameters={"units": "si"}, secret_parameters={"key": "k"}, **common,
    )  # fmt: skip
    return [stdio, remote, made]


def test_the_export_writes_every_key_of_the_table_and_no_other(toolbox):
    written = {key for server in every_way_set(toolbox) for key in export_server(server)}
    assert written == set(names("file_key"))


def test_the_imports_error_paths_and_limits_keep_the_files_keys():
    assert (
        FILE_KEYS.items()
        >= {
            "tool_filters": "toolFilters",
            "transport": "type",
            "idle_timeout": "idleTimeout",
            "memory_limit_mb": "limits.memoryMb",
            "process_limit": "limits.processes",
            "cpu_limit_seconds": "limits.cpuSeconds",
            "open_files_limit": "limits.openFiles",
            "egress_allow": "egressAllow",
            "host_ports": "hostPorts",
        }.items()
    )
    assert list(LIMIT_KEYS.values()) == ["memoryMb", "processes", "cpuSeconds", "openFiles"]


def test_the_desktop_form_carries_or_notes_what_the_table_says(toolbox):
    stdio, remote, _ = every_way_set(toolbox)
    data, left_out = desktop_server(stdio)
    remote_data, _ = desktop_server(remote)
    carried = set(names("file_key", lambda field: field.desktop))
    assert {*data, *remote_data} <= carried
    assert set(left_out) == set(names("file_key", lambda field: field.desktop is False))


# --- the API ------------------------------------------------------------------------


def test_the_apis_bodies_name_every_field_the_table_gives_them():
    assert set(ServerIn.model_fields) == set(names("api"))
    assert set(ServerOut.model_fields) == set(names("answer"))


def test_only_operators_see_the_hidden_fields_and_set_the_raw_ones(toolbox):
    stdio = every_way_set(toolbox)[0]
    hidden = names("answer", lambda field: field.hidden)
    as_tenant = ServerOut.of(stdio, operator=False)
    as_operator = ServerOut.of(stdio, operator=True)
    for name in hidden:
        assert getattr(as_tenant, name) is None, name
        assert getattr(as_operator, name) is not None, name
    # In the order a 403 names them.
    assert RAW_FIELDS == ("transport", "command", "args", "env", "cwd", "url", "headers", "auth")
    assert {"command", "args", "cwd", "url", "auth", "mounts", "limits"} <= set(RAW_KEYS)
    assert {"type", "env", "headers", "catalog"} <= RAW_CHANGES - set(RAW_KEYS)


def test_every_field_the_api_sets_and_the_model_leaves_empty_may_be_unset():
    nullable = {
        field.api
        for field in SERVER_FIELDS
        if field.api is not None
        and Server._meta.get_field(field.name).null
        and not Server._meta.get_field(field.name).is_relation
    }
    assert nullable == set(NULLABLE)


# --- the gateway's snapshot ---------------------------------------------------------


def test_every_attribute_of_a_snapshot_is_some_fields():
    carried = {word for field in SERVER_FIELDS for word in field.snapshot}
    attributes = {field.name for field in dataclasses.fields(ServerConfig)} - {"fingerprint"}
    assert attributes <= carried
    sandbox = names("name", lambda field: field.snapshot == ("sandbox",))
    assert set(sandbox) == set(SANDBOX_FIELDS)


def test_a_snapshot_reads_only_the_fields_it_carries_and_all_of_them_at_once(toolbox):
    servers = every_way_set(toolbox)
    Server.objects.update(enabled=True)
    with CaptureQueriesContext(connection) as three:
        load_tenant(toolbox.tenant_id, 1)
    for server in servers:  # a second of each kind
        server.pk, server.name, server.enabled = None, f"{server.name}-2", True
        server.save()
    with CaptureQueriesContext(connection) as six:
        config = load_tenant(toolbox.tenant_id, 1)
    assert config is not None and len(config.toolboxes[0].servers) == 6
    assert len(six) == len(three)  # no field read one server at a time
    read = " ".join(query["sql"] for query in six.captured_queries)
    assert "last_check_tools" not in read and "last_check_cause" not in read
    assert "last_check_ok" not in SNAPSHOT_READS and "catalog_entry" in SNAPSHOT_READS
