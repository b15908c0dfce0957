"""The plan of `PUT .../config` names a server's `position` only when it moved among its
siblings: not when a sibling before it was deleted, or one added before it."""

from __future__ import annotations

from toolboxes.models import Server

CONFIG = "/tenants/acme/config"


def put(client, document) -> dict:
    answer = client("PUT", CONFIG + "?dry_run=true", document)
    assert answer.status_code == 200, answer.content
    return answer.json()


def servers_of(document) -> dict:
    return document["toolboxes"]["acme-tools"]["mcpServers"]


def test_a_sibling_deleted_or_added_before_moves_nothing(api, acme):
    Server.objects.create(toolbox=acme.toolbox, name="third", command="third", position=2)
    client = api("operator")
    document = client("GET", CONFIG).json()
    del servers_of(document)["acme-time"]  # the first: the others' indexes shift by one
    plan = put(client, document)
    assert (plan["created"], plan["changed"], plan["deleted"]) == (
        [],
        [],
        ["acme-tools/acme-time"],
    )
    document = client("GET", CONFIG).json()
    servers = servers_of(document)
    document["toolboxes"]["acme-tools"]["mcpServers"] = {"first": {"command": "x"}, **servers}
    plan = put(client, document)
    assert (plan["created"], plan["changed"], plan["deleted"]) == (
        ["acme-tools/first"],
        [],
        [],
    )


def test_a_server_moved_among_its_siblings_is_a_position_change(api, acme):
    client = api("operator")
    document = client("GET", CONFIG).json()
    servers = servers_of(document)
    document["toolboxes"]["acme-tools"]["mcpServers"] = dict(reversed(servers.items()))
    plan = put(client, document)
    assert plan["changed"] == [
        {"name": "acme-tools/acme-remote", "fields": ["position"]},
        {"name": "acme-tools/acme-time", "fields": ["position"]},
    ]
