"""Tenant members see and touch only their tenants' objects; another tenant's are 404."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from accounts.models import ApiToken, Membership
from toolboxes.models import ApiKey, Server, Toolbox

from .conftest import OTHER_SECRET, SECRET


def object_urls(objects, membership):
    """Every admin URL of one tenant's objects, by id."""
    urls = []
    for model, obj, extra in [
        ("tenant", objects.tenant, []),
        ("toolbox", objects.toolbox, []),
        ("server", objects.server, ["reveal"]),
        ("server", objects.remote, ["reveal"]),
        ("apikey", objects.api_key, ["revoke"]),
    ]:
        for view in ["change", "history", "delete", *extra]:
            urls.append(reverse(f"admin:toolboxes_{model}_{view}", args=[obj.pk]))
    for view in ["change", "history", "delete"]:
        urls.append(reverse(f"admin:accounts_membership_{view}", args=[membership.pk]))
    return urls


def token_urls(token):
    """Every admin URL of a member's personal API token (another member's is missing)."""
    views = ["change", "history", "delete", "revoke", "handoff"]
    return [reverse(f"admin:accounts_apitoken_{view}", args=[token.pk]) for view in views]


@pytest.fixture
def globex_urls(globex, people):
    token, _ = ApiToken.issue(people["globex_admin"], name="gus's", tenant=globex.tenant)
    membership = Membership.objects.get(user=people["globex_admin"])
    return object_urls(globex, membership) + token_urls(token)


@pytest.mark.parametrize("who", ["acme_admin", "acme_viewer"])
def test_another_tenants_objects_answer_404_for_get_and_post(as_user, globex_urls, who):
    client = as_user(who)
    for url in globex_urls:
        assert client.get(url).status_code == 404, url
        assert client.post(url, {"post": "yes"}).status_code == 404, url


def test_nothing_of_another_tenant_changed_by_those_posts(as_user, globex, globex_urls):
    client = as_user("acme_admin")
    for url in globex_urls:
        client.post(url, {"post": "yes"})
    globex.api_key.refresh_from_db()
    assert globex.api_key.revoked_at is None
    assert ApiToken.objects.get(name="gus's").revoked_at is None
    assert Toolbox.objects.filter(pk=globex.toolbox.pk).exists()
    assert not LogEntry.objects.filter(object_id=str(globex.server.pk)).exists()


def test_operator_reaches_every_tenants_objects(as_user, globex_urls):
    client = as_user("operator")
    for url in globex_urls:
        if not url.endswith(("/reveal/", "/revoke/", "/delete/")):
            assert client.get(url).status_code == 200, url


CHANGELISTS = ["tenant", "toolbox", "server", "apikey"]


@pytest.mark.parametrize("who", ["acme_admin", "acme_viewer"])
@pytest.mark.parametrize("model", CHANGELISTS)
def test_changelists_list_only_the_members_tenants(as_user, acme, globex, who, model):
    page = as_user(who).get(reverse(f"admin:toolboxes_{model}_changelist")).content.decode()
    assert "acme" in page
    assert "globex" not in page.lower()


def test_membership_changelist_is_scoped(as_user):
    page = as_user("acme_viewer").get(reverse("admin:accounts_membership_changelist"))
    html = page.content.decode()
    assert "ada" in html and "vic" in html
    assert "gus" not in html and "globex" not in html.lower()


@pytest.mark.parametrize("model", ["toolbox", "server", "apikey"])
def test_search_finds_nothing_of_another_tenant(as_user, model):
    client = as_user("acme_admin")
    response = client.get(reverse(f"admin:toolboxes_{model}_changelist"), {"q": "globex"})
    assert response.context["cl"].result_count == 0
    response = client.get(reverse(f"admin:toolboxes_{model}_changelist"), {"q": "acme"})
    assert response.context["cl"].result_count >= 1


@pytest.mark.parametrize(
    ("model", "lookup"),
    [("toolbox", "tenant__id__exact"), ("server", "toolbox__tenant__id__exact")],
)
def test_filter_by_another_tenants_id_shows_nothing_of_it(as_user, globex, model, lookup):
    url = reverse(f"admin:toolboxes_{model}_changelist")
    response = as_user("acme_admin").get(url, {lookup: globex.tenant.pk})
    assert response.status_code == 200
    assert "globex" not in response.content.decode().lower()


def test_operator_changelist_and_filters_list_every_tenant(as_user):
    html = as_user("operator").get(reverse("admin:toolboxes_toolbox_changelist")).content
    assert b"globex" in html.lower() and b"acme" in html


def test_choice_lists_offer_only_tenants_the_member_administers(as_user, acme, globex):
    client = as_user("mixed")  # admin of acme, viewer of globex
    for name, field in [
        ("toolbox", "tenant"),
        ("apikey", "tenant"),
        ("apikey", "toolboxes"),
        ("server", "toolbox"),
    ]:
        form = client.get(reverse(f"admin:toolboxes_{name}_add")).context["adminform"].form
        choices = list(form.fields[field].queryset)
        assert choices, (name, field)
        assert all(
            getattr(choice, "tenant_id", choice.pk) == acme.tenant.pk for choice in choices
        ), (name, field, choices)
    form = client.get(reverse("admin:accounts_membership_add")).context["adminform"].form
    assert list(form.fields["tenant"].queryset) == [acme.tenant]


def test_list_filter_choices_name_only_the_members_tenants(as_user, make_tenant):
    ApiKey.issue(make_tenant("initech", name="Initech"), label="initech-key")
    response = as_user("mixed").get(reverse("admin:toolboxes_apikey_changelist"))
    [tenant_filter] = [
        spec for spec in response.context["cl"].filter_specs if spec.title == "tenant"
    ]
    assert sorted(label for _, label in tenant_filter.lookup_choices) == ["Acme Inc", "Globex Inc"]
    assert "Initech" not in response.content.decode()


def test_posting_another_tenants_id_in_a_form_is_refused(as_user, globex):
    client = as_user("mixed")
    response = client.post(
        reverse("admin:toolboxes_toolbox_add"),
        {
            "tenant": globex.tenant.pk,
            "name": "sneaky",
            "description": "x",
            "servers-TOTAL_FORMS": 0,
            "servers-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    response = client.post(
        reverse("admin:toolboxes_apikey_add"),
        {"tenant": globex.tenant.pk, "label": "sneaky", "expires_at_0": "", "expires_at_1": ""},
    )
    assert "Select a valid choice" in response.content.decode()
    assert not Toolbox.objects.filter(name="sneaky").exists()
    assert not ApiKey.objects.filter(label="sneaky").exists()


def test_revoke_action_on_a_mixed_selection_touches_only_administered_keys(as_user, acme, globex):
    other_acme_key, _ = ApiKey.issue(acme.tenant, label="second")
    response = as_user("mixed").post(
        reverse("admin:toolboxes_apikey_changelist"),
        {
            "action": "revoke_keys",
            "_selected_action": [acme.api_key.pk, other_acme_key.pk, globex.api_key.pk],
        },
    )
    assert response.status_code == 302
    assert set(ApiKey.objects.filter(revoked_at__isnull=False)) == {acme.api_key, other_acme_key}


def test_delete_action_on_a_mixed_selection_deletes_only_administered_objects(
    as_user, acme, globex
):
    data = {
        "action": "delete_selected",
        "_selected_action": [acme.toolbox.pk, globex.toolbox.pk],
        "post": "yes",
    }
    for who in ("acme_admin", "mixed"):
        as_user(who).post(reverse("admin:toolboxes_toolbox_changelist"), data)
    assert list(Toolbox.objects.all()) == [globex.toolbox]


def test_viewer_of_a_tenant_sees_it_but_changes_nothing(as_user, globex):
    client = as_user("mixed")  # viewer of globex
    change = reverse("admin:toolboxes_toolbox_change", args=[globex.toolbox.pk])
    assert client.get(change).status_code == 200
    assert client.post(change, {"name": "renamed", "description": "x"}).status_code == 403
    for url in [
        reverse("admin:toolboxes_server_reveal", args=[globex.server.pk]),
        reverse("admin:toolboxes_apikey_revoke", args=[globex.api_key.pk]),
        reverse("admin:toolboxes_toolbox_delete", args=[globex.toolbox.pk]),
    ]:
        assert client.post(url, {"post": "yes"}).status_code == 403, url
    globex.toolbox.refresh_from_db()
    globex.api_key.refresh_from_db()
    assert globex.toolbox.name == "globex-tools"
    assert globex.api_key.revoked_at is None


WRITES = [
    ("toolboxes_tenant_add", None),
    ("toolboxes_toolbox_add", None),
    ("toolboxes_server_add", None),
    ("toolboxes_apikey_add", None),
    ("accounts_membership_add", None),
    ("toolboxes_tenant_delete", "tenant"),
    ("toolboxes_toolbox_delete", "toolbox"),
    ("toolboxes_server_delete", "server"),
    ("toolboxes_apikey_delete", "api_key"),
    ("toolboxes_server_reveal", "server"),
    ("toolboxes_apikey_revoke", "api_key"),
]


@pytest.mark.parametrize(("name", "attribute"), WRITES)
def test_viewer_is_refused_every_write(as_user, acme, name, attribute):
    args = [getattr(acme, attribute).pk] if attribute else []
    client = as_user("acme_viewer")
    assert client.post(reverse(f"admin:{name}", args=args), {"post": "yes"}).status_code == 403


@pytest.mark.parametrize(
    ("model", "attribute"),
    [("tenant", "tenant"), ("toolbox", "toolbox"), ("server", "server"), ("apikey", "api_key")],
)
def test_viewer_change_forms_are_read_only(as_user, acme, model, attribute):
    url = reverse(f"admin:toolboxes_{model}_change", args=[getattr(acme, attribute).pk])
    response = as_user("acme_viewer").get(url)
    assert response.status_code == 200
    assert not response.context["has_change_permission"]
    assert 'name="_save"' not in response.content.decode()


def test_viewer_actions_do_nothing(as_user, acme):
    client = as_user("acme_viewer")
    response = client.get(reverse("admin:toolboxes_apikey_changelist"))
    assert "revoke_keys" not in response.content.decode()
    client.post(
        reverse("admin:toolboxes_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [acme.api_key.pk]},
    )
    acme.api_key.refresh_from_db()
    assert acme.api_key.revoked_at is None


def test_tenant_admin_cannot_change_the_operators_tenant_fields(as_user, acme):
    client = as_user("acme_admin")
    url = reverse("admin:toolboxes_tenant_change", args=[acme.tenant.pk])
    html = client.get(url).content.decode()
    assert 'name="max_connections"' not in html and 'name="is_active"' not in html
    client.post(
        url,
        {
            "slug": "taken-over",
            "is_active": "",
            "max_connections": "9999",
            "toolboxes-TOTAL_FORMS": 0,
            "toolboxes-INITIAL_FORMS": 0,
            "api_keys-TOTAL_FORMS": 0,
            "api_keys-INITIAL_FORMS": 0,
        },
    )
    acme.tenant.refresh_from_db()
    assert (acme.tenant.slug, acme.tenant.is_active, acme.tenant.max_connections) == (
        "acme",
        True,
        None,
    )
    assert client.get(reverse("admin:toolboxes_tenant_add")).status_code == 403


def test_tenant_admin_manages_its_toolboxes_keys_and_servers(as_user, acme):
    client = as_user("acme_admin")
    response = client.post(
        reverse("admin:toolboxes_toolbox_add"),
        {
            "tenant": acme.tenant.pk,
            "name": "research",
            "description": "search tools",
            "servers-TOTAL_FORMS": 0,
            "servers-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302
    toolbox = Toolbox.objects.get(name="research")
    response = client.post(
        reverse("admin:toolboxes_apikey_add"),
        {
            "tenant": acme.tenant.pk,
            "label": "ci",
            "toolboxes": [toolbox.pk],
            "expires_at_0": "",
            "expires_at_1": "",
        },
        follow=True,
    )
    assert response.status_code == 200 and "wb_" in response.content.decode()
    assert list(ApiKey.objects.get(label="ci").toolboxes.all()) == [toolbox]
    response = client.post(
        reverse("admin:toolboxes_apikey_revoke", args=[acme.api_key.pk]), {"post": "yes"}
    )
    assert response.status_code == 302


def test_history_is_scoped_and_holds_no_secret_values(as_user, acme, globex):
    client = as_user("acme_admin")
    url = reverse("admin:toolboxes_server_reveal", args=[acme.server.pk])
    assert SECRET in client.post(url).content.decode()
    assert LogEntry.objects.get(object_id=str(acme.server.pk)).get_change_message() == (
        "Revealed secrets"
    )
    history = client.get(reverse("admin:toolboxes_server_history", args=[acme.server.pk]))
    html = history.content.decode()
    assert "Revealed secrets" in html and SECRET not in html
    # The operator's entry on globex is not in acme's admin's "recent actions" either.
    operator = as_user("operator")
    operator.post(reverse("admin:toolboxes_server_reveal", args=[globex.server.pk]))
    index = client.get(reverse("admin:index")).content.decode()
    assert "globex" not in index.lower()


def test_servers_of_another_tenant_are_not_reachable_through_inlines(as_user, acme, globex):
    client = as_user("acme_admin")
    page = client.get(reverse("admin:toolboxes_toolbox_change", args=[acme.toolbox.pk]))
    formset = page.context["inline_admin_formsets"][0].formset
    assert {form.instance for form in formset.forms} == {acme.server, acme.remote}
    assert OTHER_SECRET not in page.content.decode()
    assert Server.objects.filter(toolbox=globex.toolbox).count() == 2
