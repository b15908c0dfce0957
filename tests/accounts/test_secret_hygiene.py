"""Secrets: masked on every read path, revealed only by a logged action of those who may,
and never kept when a server moves to a new command, args or URL (typed again, or
removed)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from kernel.masking import MASK
from tests.toolboxes.helpers import server_change_post
from toolboxes.admin.forms import ServerForm

from .conftest import SECRET


@pytest.mark.parametrize("who", ["acme_viewer", "acme_admin", "operator"])
def test_read_paths_never_show_a_value(as_user, acme, who):
    client = as_user(who)
    for url in [
        reverse("admin:toolboxes_server_change", args=[acme.server.pk]),
        reverse("admin:toolboxes_server_change", args=[acme.remote.pk]),
        reverse("admin:toolboxes_toolbox_change", args=[acme.toolbox.pk]),
        reverse("admin:toolboxes_server_changelist"),
        reverse("admin:toolboxes_server_history", args=[acme.server.pk]),
        reverse("admin:toolboxes_tenant_change", args=[acme.tenant.pk]),
    ]:
        html = client.get(url).content.decode()
        assert SECRET not in html, url


def test_viewer_lists_show_names_masked(as_user, acme):
    html = as_user("acme_viewer").get(reverse("admin:toolboxes_server_changelist")).content
    assert f"TOKEN={MASK}".encode() in html and f"Authorization={MASK}".encode() in html


def test_read_only_forms_mask_secret_fields(rf, people, acme):
    """Wherever a read-only form shows env or headers, it shows names only (the mixin's
    rule, whatever fields an admin class lists)."""
    from django.contrib import admin

    from kernel.admin_kit.scoping import TenantScoped, masked_display
    from toolboxes.models import Server, Toolbox

    class RawServerInline(TenantScoped, admin.StackedInline):
        model = Server
        form = ServerForm
        tenant_path = "toolbox__tenant"
        secret_fields = ("env", "headers")
        fields = ["name", "env", "headers"]

    inline = RawServerInline(Toolbox, admin.site)
    request = rf.get("/")
    for who, masked in [("acme_viewer", True), ("acme_admin", False)]:
        request.user = people[who]
        [(_, options)] = inline.get_fieldsets(request, acme.toolbox)
        expected = ["name", masked_display("env"), masked_display("headers")]
        assert options["fields"] == (expected if masked else ["name", "env", "headers"])
        inline.get_formset(request, acme.toolbox)  # builds: the masked columns are read-only
    assert masked_display("env")(acme.server) == f"TOKEN={MASK}"
    assert masked_display("headers")(acme.remote) == f"Authorization={MASK}"


@pytest.mark.parametrize(("who", "status"), [("acme_admin", 200), ("operator", 200)])
def test_reveal_is_an_explicit_logged_action(as_user, acme, who, status):
    client = as_user(who)
    url = reverse("admin:toolboxes_server_reveal", args=[acme.server.pk])
    assert SECRET not in client.get(url).content.decode()  # confirmation first
    response = client.post(url)
    assert response.status_code == status and SECRET in response.content.decode()
    history = client.get(reverse("admin:toolboxes_server_history", args=[acme.server.pk]))
    assert "Revealed secrets" in history.content.decode()


def test_viewer_cannot_reveal(as_user, acme):
    url = reverse("admin:toolboxes_server_reveal", args=[acme.server.pk])
    assert as_user("acme_viewer").post(url).status_code == 403


def saved(server, **overrides):
    form = ServerForm(data=server_change_post(server, **overrides), instance=server)
    assert form.is_valid(), form.errors
    form.save()
    server.refresh_from_db()
    return server


def refused(server, **overrides):
    form = ServerForm(data=server_change_post(server, **overrides), instance=server)
    assert not form.is_valid()
    return form.errors


AGAIN = "must be typed again: a stored secret is not kept across a change of the server's"


@pytest.mark.parametrize(
    ("change", "what"),
    [({"command": "/bin/sh"}, "command"), ({"args": json.dumps(["-c", "env"])}, "args")],
)
def test_new_command_or_args_never_keep_stored_env_values(acme, change, what):
    assert refused(acme.server, **change) == {"env": [f"'TOKEN' {AGAIN} {what}."]}
    acme.server.refresh_from_db()
    assert acme.server.env == {"TOKEN": SECRET}  # nothing saved
    assert saved(acme.server, **change, env="{}").env == {}  # removed: saved without it


def test_new_command_keeps_values_entered_again(acme):
    server = saved(acme.server, command="uvx", env=json.dumps({"TOKEN": "typed-again", "NEW": "n"}))
    assert server.env == {"TOKEN": "typed-again", "NEW": "n"}


def test_same_destination_keeps_stored_values(acme):
    assert saved(acme.server, timeout=9).env == {"TOKEN": SECRET}


def test_new_url_never_keeps_stored_headers(acme):
    errors = refused(acme.remote, url="https://attacker.example/mcp")
    assert errors == {"headers": [f"'Authorization' {AGAIN} URL."]}
    server = saved(acme.remote, url="https://attacker.example/mcp", headers="{}")
    assert server.headers == {}
    assert saved(acme.remote, timeout=5).headers == {}  # and nothing comes back


def test_admin_change_of_command_asks_for_the_secret_again(as_user, acme):
    """Through the admin (an operator's raw server form; tenant admins never see a command)."""
    client = as_user("operator")
    url = reverse("admin:toolboxes_server_change", args=[acme.server.pk])
    response = client.post(url, server_change_post(acme.server, command="/bin/sh"))
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.errors == {"env": [f"'TOKEN' {AGAIN} command."]}
    acme.server.refresh_from_db()
    assert (acme.server.command, acme.server.env) == ("mcp-server-time", {"TOKEN": SECRET})
