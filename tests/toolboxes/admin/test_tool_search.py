"""The admin's tool search: what a model would find for a query, from each enabled server's
last listing, filters and approval holds applied, within the person's tenant only."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from tests.accounts.conftest import (
    acme,
    as_user,
    globex,
    people,
)
from tests.toolboxes.search_world import CLOCK, search_world
from toolboxes import gateway_questions, server_status

_ = (acme, as_user, globex, people)


@pytest.fixture
def world(acme, globex):
    return search_world(acme, globex)


def test_the_gateway_answers_with_open_toolboxs_entries_best_first(world):
    acme, _, _ = world
    found = gateway_questions.find_tools(acme.tenant.pk, "current time")
    assert [(t.rank, t.toolbox, t.server, t.name) for t in found.tools] == [
        (1, "acme-tools", "acme-time", "get_current_time"),
        (2, "acme-tools", "acme-time", "convert_time"),
    ]
    assert found.tools[0].score > found.tools[1].score > 0
    assert found.tools[0].entry == {
        "name": "get_current_time",
        "description": "Current time in a timezone",
        "inputSchema": {
            "type": "object",
            "properties": {"timezone": {"type": "string", "description": "IANA name"}},
        },
        "server": "acme-time",
        "toolbox": "acme-tools",
    }
    assert [(s.toolbox, s.server, s.reason) for s in found.not_searched] == [
        ("acme-tools", "acme-remote", "never listed"),
        ("files", "legacy", "its last check failed"),
    ]


def test_filtered_and_held_tools_are_never_found(world):
    acme, _, _ = world
    found = gateway_questions.find_tools(acme.tenant.pk, "file disk", limit=50)
    assert [t.name for t in found.tools] == ["read_file"]  # wipe_disk filtered, send_file held
    assert gateway_questions.find_tools(acme.tenant.pk, "erase wipe").tools == ()


def test_a_stored_definition_no_client_could_be_given_is_left_out(world):
    acme, _, _ = world
    broken = {"name": "archive_file", "description": "Archive a file"}  # no inputSchema
    server_status.save_result(acme.server.pk, True, 5, "", [broken, CLOCK])
    found = gateway_questions.find_tools(acme.tenant.pk, "archive a file or the time", "acme-tools")
    assert [t.name for t in found.tools] == ["get_current_time"]


def test_one_toolbox_a_limit_and_a_blank_query(world):
    acme, _, _ = world
    tenant_id = acme.tenant.pk
    found = gateway_questions.find_tools(tenant_id, "time", "files")
    assert found.tools == ()
    assert [s.server for s in found.not_searched] == ["legacy"]
    assert [
        t.name for t in gateway_questions.find_tools(tenant_id, "current time", limit=1).tools
    ] == ["get_current_time"]
    assert gateway_questions.find_tools(tenant_id, "  ").tools == ()
    assert gateway_questions.find_tools(tenant_id, "time", "nope") is None
    assert gateway_questions.find_tools(0, "time") is None


def search(client, obj, query: str | None):
    url = reverse(f"admin:toolboxes_{obj._meta.model_name}_search", args=[obj.pk])
    return client.get(url, {} if query is None else {"q": query})


def rows(response) -> list[list[str]]:
    body = re.search(r"<tbody>(.*?)</tbody>", response.content.decode(), re.S)
    if body is None:
        return []
    return [
        [" ".join(html.unescape(re.sub(r"<[^>]+>", "", cell)).split()) for cell in cells]
        for cells in (
            re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)
        )
    ]


def text_of(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def test_the_tenants_page_lists_what_a_model_would_find(world, as_user):
    acme, _, _ = world
    response = search(as_user("acme_viewer"), acme.tenant, "current time")
    assert response.status_code == 200
    assert rows(response) == [
        [
            "1",
            "acme-tools/acme-time/get_current_time",
            "Current time in a timezone",
            "acme-tools/acme-time",
        ],
        [
            "2",
            "acme-tools/acme-time/convert_time",
            "Convert a time between timezones",
            "acme-tools/acme-time",
        ],
    ]
    server_url = reverse("admin:toolboxes_server_change", args=[acme.server.pk])
    assert f'<a href="{server_url}">acme-tools/acme-time</a>' in response.content.decode()
    text = text_of(response)
    assert "acme-tools/acme-remote : not searched: never listed — check the server" in text
    assert "files/legacy : not searched: its last check failed — check the server" in text
    check_url = reverse("admin:toolboxes_server_check", args=[acme.remote.pk])
    assert f'<a href="{check_url}">check the server</a>' in response.content.decode()


def test_the_toolboxs_page_searches_that_toolbox_only(world, as_user):
    _, _, files_box = world
    response = search(as_user("acme_admin"), files_box, "time")
    assert response.status_code == 200 and rows(response) == []
    assert "No tool matches “time”." in text_of(response)
    response = search(as_user("acme_admin"), files_box, "read a file")
    assert [row[1] for row in rows(response)] == ["files/disk/read_file"]


def test_an_empty_query_shows_nothing(world, as_user):
    acme, _, _ = world
    for query in (None, "", "   "):
        response = search(as_user("acme_admin"), acme.tenant, query)
        text = text_of(response)
        assert response.status_code == 200 and rows(response) == []
        assert "No tool matches" not in text and "not searched" not in text
        assert 'name="q"' in response.content.decode()


def test_another_tenants_page_is_missing(world, as_user):
    acme, globex, _ = world
    client = as_user("globex_admin")
    assert search(client, acme.tenant, "time").status_code == 404
    assert search(client, acme.toolbox, "time").status_code == 404
    found = rows(search(client, globex.tenant, "time"))
    assert [row[1] for row in found] == ["globex-tools/globex-time/get_current_time"]


@pytest.mark.parametrize("model", ["tenant", "toolbox"])
def test_the_objects_page_holds_the_search_box(world, as_user, model):
    acme, _, _ = world
    obj = acme.tenant if model == "tenant" else acme.toolbox
    page = (
        as_user("acme_admin")
        .get(reverse(f"admin:toolboxes_{model}_change", args=[obj.pk]))
        .content.decode()
    )
    action = reverse(f"admin:toolboxes_{model}_search", args=[obj.pk])
    assert (
        f'<form method="get" action="{action}" class="wb-tool-search wb-tool-search-compact"'
        in page
    )
    assert f"Search the tools of this {model} as a model would" in page


def test_asked_before_the_site_answers_it_says_so(monkeypatch):
    monkeypatch.setattr(gateway_questions, "_answers", [])
    with pytest.raises(gateway_questions.NotAnswered, match=r"WorkbenchSiteConfig\.ready"):
        gateway_questions.find_tools(1, "time")
