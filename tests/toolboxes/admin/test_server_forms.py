"""The server form an admin can read: fields grouped by transport, args one per line, env
and headers as name/value rows (values write-only), tool filters ticked from the server's
last check, a filter naming a tool it does not offer said on the form, in lists and after
saving, and the help said once."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from toolboxes.admin.server_layout import HELP_COMMAND, HELP_TOOLS
from toolboxes.models import Server, Tenant, Toolbox

SECRET = "tok-123-secret"
TYPO_WARNING = "The filter names tools the server does not offer: get_curent_time."
OFFERED = [
    {"name": "get_current_time", "title": "Current time", "description": "Now, somewhere"},
    {"name": "convert_time", "title": None, "description": "Between time zones"},
]


@pytest.fixture
def toolbox(db):
    return Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme"), name="dev", description="d"
    )


@pytest.fixture
def server(toolbox):
    return Server.objects.create(
        toolbox=toolbox,
        name="time",
        command="uvx",
        args=["mcp-server-time", "--local-timezone", "Europe/Paris"],
        env={"API_TOKEN": SECRET},
        last_check_ok=True,
        last_check_tools=OFFERED,
    )


def post(server: Server | None, toolbox: Toolbox, **fields: str) -> dict[str, object]:
    """The new form's own post: rows, lines and ticks (no JSON)."""
    data: dict[str, object] = {
        "toolbox": toolbox.pk,
        "name": "time",
        "position": "0",
        "transport": "stdio",
        "enabled": "on",
        "command": "uvx",
        "cwd": "",
        "args": "mcp-server-time\n--local-timezone\nEurope/Paris\n",
        "env__rows": "3",
        "env__name__0": "API_TOKEN" if server else "",
        "env__value__0": "",
        "url": "",
        "headers__rows": "2",
        "tool_filters__present": "1",
        "tool_filters": ["*"],
        "timeout": "60",
        "mounts": "[]",
        "network": "on",
    }
    data.update(fields)
    return data


def change(server: Server) -> str:
    return reverse("admin:toolboxes_server_change", args=[server.pk])


def test_args_are_lines_and_env_rows_are_write_only(admin_client, toolbox):
    data = post(None, toolbox, **{"env__name__1": "REGION", "env__value__1": "eu-west"})
    response = admin_client.post(reverse("admin:toolboxes_server_add"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    server = Server.objects.get()
    assert server.args == ["mcp-server-time", "--local-timezone", "Europe/Paris"]
    assert server.env == {"REGION": "eu-west"}
    html = admin_client.get(change(server)).content.decode()
    assert "mcp-server-time\n--local-timezone\nEurope/Paris</textarea>" in html
    assert 'name="env__name__0" value="REGION"' in html
    assert "eu-west" not in html
    assert 'placeholder="stored: leave empty to keep"' in html


def test_a_pasted_json_list_of_args_is_read_as_such(admin_client, server, toolbox):
    # New args: the stored secret is typed again (toolboxes.destinations).
    data = post(
        server, toolbox, args='["-y", "@modelcontextprotocol/server-time"]', env__value__0="t"
    )
    assert admin_client.post(change(server), data).status_code == 302
    server.refresh_from_db()
    assert server.args == ["-y", "@modelcontextprotocol/server-time"]


def test_an_empty_value_keeps_a_new_one_replaces_remove_deletes(admin_client, server, toolbox):
    assert admin_client.post(change(server), post(server, toolbox, timeout="9")).status_code == 302
    server.refresh_from_db()
    assert (server.timeout, server.env) == (9, {"API_TOKEN": SECRET})

    data = post(server, toolbox, env__value__0="tok-new", env__name__1="B", env__value__1="b")
    assert admin_client.post(change(server), data).status_code == 302
    server.refresh_from_db()
    assert server.env == {"API_TOKEN": "tok-new", "B": "b"}

    data = post(server, toolbox, env__remove__0="on", env__name__1="B")
    assert admin_client.post(change(server), data).status_code == 302
    server.refresh_from_db()
    assert server.env == {"B": "b"}


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"env__name__1": "NEW"}, "Enter a value for &#x27;NEW&#x27;."),
        ({"env__value__1": "orphan-value"}, "Enter a name for each value."),
        (
            {"env__name__1": "API_TOKEN", "env__value__1": "x"},
            "&#x27;API_TOKEN&#x27; is given twice.",
        ),
    ],
)
def test_row_errors(admin_client, server, toolbox, fields, error):
    response = admin_client.post(change(server), post(server, toolbox, **fields))
    html = response.content.decode()
    assert response.status_code == 200 and error in html
    assert SECRET not in html and "orphan-value" not in html


def test_headers_of_a_remote_server_are_rows_too(admin_client, toolbox):
    data = post(
        None,
        toolbox,
        transport="streamable-http",
        command="",
        args="",
        url="https://example.com/mcp",
        network="on",
        **{"headers__name__0": "Authorization", "headers__value__0": "Bearer sk-remote-1"},
    )
    response = admin_client.post(reverse("admin:toolboxes_server_add"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    server = Server.objects.get()
    assert server.headers == {"Authorization": "Bearer sk-remote-1"}
    html = admin_client.get(change(server)).content.decode()
    assert 'name="headers__name__0" value="Authorization"' in html
    assert "sk-remote-1" not in html


def test_filters_are_the_servers_tools_to_tick(admin_client, server, toolbox):
    html = admin_client.get(change(server)).content.decode()
    assert 'name="tool_filters" value="*" checked' in html
    assert "All tools, including future ones" in html
    assert 'name="tool_filters" value="get_current_time">' in html
    assert '<code>get_current_time</code> <span title="Now, somewhere">Current time' in html
    assert '<code>convert_time</code> <span title="Between time zones">Between time' in html

    data = post(server, toolbox, tool_filters=["get_current_time"])
    assert admin_client.post(change(server), data).status_code == 302
    server.refresh_from_db()
    assert server.tool_filters == ["get_current_time"]
    html = admin_client.get(change(server)).content.decode()
    assert 'name="tool_filters" value="get_current_time" checked' in html

    data = post(server, toolbox, tool_filters=["*", "convert_time"])  # all wins
    admin_client.post(change(server), data)
    server.refresh_from_db()
    assert server.tool_filters == ["*"]

    data = post(server, toolbox, tool_filters=[])  # nothing ticked: no tools
    admin_client.post(change(server), data)
    server.refresh_from_db()
    assert server.tool_filters == []


def test_a_filter_naming_a_tool_not_offered_is_a_warning_everywhere(admin_client, server, toolbox):
    data = post(server, toolbox, tool_filters=[], tool_filters__other="get_curent_time")
    response = admin_client.post(change(server), data, follow=True)
    server.refresh_from_db()
    assert server.tool_filters == ["get_curent_time"]  # saved, and said
    assert f"Server dev/time: {TYPO_WARNING}" in response.content.decode()
    html = admin_client.get(change(server)).content.decode()
    assert TYPO_WARNING in html
    assert 'value="get_curent_time" checked> <code>get_curent_time</code>' in html
    assert "not offered by the server" in html
    # one line above the ticks, not an error box beside them
    assert f'<p class="wb-warning wb-missing-note" role="note">{TYPO_WARNING}</p>' in html
    assert "errornote" not in html
    listing = admin_client.get(reverse("admin:toolboxes_server_changelist")).content.decode()
    assert TYPO_WARNING in listing


def test_a_server_never_checked_takes_typed_names(admin_client, toolbox):
    server = Server.objects.create(toolbox=toolbox, name="new", command="uvx")
    html = admin_client.get(change(server)).content.decode()
    assert "The server has not been checked yet: check it to list its tools, or type names." in html
    data = post(
        server, toolbox, name="new", env__name__0="", tool_filters=[], tool_filters__other="a, b c"
    )
    assert admin_client.post(change(server), data).status_code == 302
    server.refresh_from_db()
    assert server.tool_filters == ["a", "b", "c"]
    assert TYPO_WARNING not in admin_client.get(change(server)).content.decode()


def test_a_server_whose_check_failed_says_so_where_its_tools_would_be(admin_client, toolbox):
    """Not "not checked yet" (issue 37): its last check's reason, and what to do."""
    server = Server.objects.create(toolbox=toolbox, name="broken", command="uvx")
    Server.objects.filter(pk=server.pk).update(
        last_check_ok=False,
        last_check_at=timezone.now(),
        last_check_reason="the command was not found",
    )
    html = admin_client.get(change(server)).content.decode()
    assert "not been checked yet" not in html
    assert (
        "Its tools are not known: its last check failed (the command was not found). "
        "Check it again once fixed, or type names."
    ) in html


def test_fields_are_grouped_by_transport_and_the_help_said_once(admin_client, server):
    html = admin_client.get(change(server)).content.decode()
    assert html.count(HELP_COMMAND) == 1 and html.count(HELP_TOOLS) == 1
    assert "stdio: the program." not in html  # no per-field help
    # a server of one's own: the second way, after the catalog's
    assert html.index('class="module aligned wb-catalog"') < html.index(
        'class="module aligned wb-raw"'
    )
    assert 'class="module aligned wb-raw wb-stdio"' in html
    assert 'class="module aligned wb-raw wb-remote"' in html
    assert "toolboxes/server_form.js" in html


def test_the_toolbox_page_shows_each_server_with_its_status(admin_client, server, toolbox):
    html = admin_client.get(
        reverse("admin:toolboxes_toolbox_change", args=[toolbox.pk])
    ).content.decode()
    assert 'name="servers-0-env__name__0" value="API_TOKEN"' in html
    assert "ok: 2 tools in" not in html  # no connect time recorded: not a real check
    check = reverse("admin:toolboxes_server_check", args=[server.pk])
    assert f'formaction="{check}"' in html
    assert SECRET not in html


def test_a_new_server_exposes_all_tools_by_default(db, client):
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_superuser("operator-new", password="x"))
    html = client.get(reverse("admin:toolboxes_server_add")).content.decode()
    assert 'name="tool_filters" value="*" checked' in html


def test_the_arguments_box_is_as_tall_as_its_lines(admin_client, toolbox):
    """Each argument on its line, a long one counted wrapped, and a line more to type."""
    path = "/home/workbench/tenants/acme/repositories/" + "a-long-project-name-" * 4
    server = Server.objects.create(
        toolbox=toolbox, name="git", command="uvx", args=["mcp-server-git", "--repository", path]
    )
    html = admin_client.get(change(server)).content.decode()
    assert '<textarea name="args" cols="80" rows="5" class="wb-lines"' in html  # 1 + 1 + 2 + 1
    new = admin_client.get(reverse("admin:toolboxes_server_add")).content.decode()
    assert '<textarea name="args" cols="80" rows="2" class="wb-lines"' in new
