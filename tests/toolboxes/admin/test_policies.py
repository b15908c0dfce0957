"""Tool policies in the admin, with Django's test client: a tenant's admin writes its
rules and defaults (validated with the model's texts), a viewer reads them only, another
tenant's rule or defaults answer 404."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from accounts.models import Membership
from toolboxes.models import ApiKey, PolicyDefaults, Tenant, Toolbox, ToolPolicy
from toolboxes.models import policies as texts


@pytest.fixture
def world(db):
    acme = Tenant.objects.create(slug="acme")
    globex = Tenant.objects.create(slug="globex")
    prod = Toolbox.objects.create(tenant=acme, name="prod", description="p")
    theirs = Toolbox.objects.create(tenant=globex, name="prod", description="p")
    users = {}
    for name, tenant, role in [("ada", acme, "admin"), ("vic", acme, "viewer")]:
        users[name] = User.objects.create_user(name, password=f"pw-{name}-1234", is_staff=True)
        Membership.objects.create(user=users[name], tenant=tenant, role=role)
    their_rule = ToolPolicy.objects.create(tenant=globex, toolbox=theirs, tool="rm")
    their_defaults = PolicyDefaults.objects.create(tenant=globex)
    return {
        "acme": acme,
        "prod": prod,
        "theirs": theirs,
        "their_rule": their_rule,
        "their_defaults": their_defaults,
        **users,
    }


def rule_post(world, **fields) -> dict:
    data = {
        "tenant": world["acme"].pk,
        "effect": "deny",
        "toolbox": world["prod"].pk,
        "server": "",
        "tool": "delete_all",
        "subject": "role",
        "role": "viewer",
        "group": "",
        "person": "",
        "api_key": "",
    }
    return data | fields


def test_a_tenant_admin_adds_a_rule_and_sees_it_listed_as_explained(client, world):
    client.force_login(world["ada"])
    response = client.post(reverse("admin:toolboxes_toolpolicy_add"), rule_post(world))
    assert response.status_code == 302, response.content.decode()[:2000]
    rule = ToolPolicy.objects.get(tenant=world["acme"])
    assert rule.as_rule().scope_text() == "toolbox 'prod', tool 'delete_all'"
    listing = client.get(reverse("admin:toolboxes_toolpolicy_changelist")).content.decode()
    assert "toolbox &#x27;prod&#x27;, tool &#x27;delete_all&#x27;" in listing
    assert "role viewer" in listing
    assert "globex" not in listing  # another tenant's rule is not listed


def test_the_forms_texts_are_the_models(client, world):
    client.force_login(world["ada"])
    url = reverse("admin:toolboxes_toolpolicy_add")
    page = client.post(url, rule_post(world, toolbox="", server="fs")).content.decode()
    assert "A server is named within a toolbox: choose the toolbox too." in page
    key, _ = ApiKey.issue(Tenant.objects.get(slug="globex"))
    page = client.post(url, rule_post(world, subject="key", role="", api_key=key.pk))
    # Another tenant's key is not even a choice for a member.
    assert "Select a valid choice" in page.content.decode()
    client.post(url, rule_post(world))
    page = client.post(url, rule_post(world, effect="allow")).content.decode()
    assert texts.DUPLICATE.replace("'", "&#x27;") in page


def test_another_tenants_rule_and_defaults_are_404(client, world):
    client.force_login(world["ada"])
    rule_url = reverse("admin:toolboxes_toolpolicy_change", args=[world["their_rule"].pk])
    assert client.get(rule_url).status_code == 404
    assert client.post(rule_url, {}).status_code == 404
    defaults_url = reverse(
        "admin:toolboxes_policydefaults_change", args=[world["their_defaults"].pk]
    )
    assert client.get(defaults_url).status_code == 404


def test_a_viewer_reads_but_cannot_write(client, world):
    rule = ToolPolicy.objects.create(tenant=world["acme"], toolbox=world["prod"])
    client.force_login(world["vic"])
    url = reverse("admin:toolboxes_toolpolicy_change", args=[rule.pk])
    assert client.get(url).status_code == 200
    assert client.post(url, rule_post(world, effect="allow")).status_code == 403
    assert client.get(reverse("admin:toolboxes_toolpolicy_add")).status_code == 403
    assert (
        client.post(reverse("admin:toolboxes_toolpolicy_add"), rule_post(world)).status_code == 403
    )
    rule.refresh_from_db()
    assert rule.effect == "deny"
    delete = reverse("admin:toolboxes_toolpolicy_delete", args=[rule.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert client.get(reverse("admin:toolboxes_policydefaults_add")).status_code == 403


def test_a_tenant_admin_switches_a_default_on_in_one_click(client, world):
    client.force_login(world["ada"])
    add = reverse("admin:toolboxes_policydefaults_add")
    response = client.post(add, {"tenant": world["acme"].pk, "deny_destructive_to_keys": "on"})
    assert response.status_code == 302
    defaults = PolicyDefaults.objects.get(tenant=world["acme"])
    assert defaults.deny_destructive_to_keys
    change = reverse("admin:toolboxes_policydefaults_change", args=[defaults.pk])
    assert client.post(change, {}).status_code == 302  # unticked: off again
    defaults.refresh_from_db()
    assert not defaults.deny_destructive_to_keys


def test_a_tenant_admin_switches_the_secrets_guard_on(client, world):
    client.force_login(world["ada"])
    add = reverse("admin:toolboxes_policydefaults_add")
    page = client.get(add).content.decode()
    assert "Remove secrets from tool results" in page
    assert (
        "Credentials found in a tool's result (private keys, cloud provider keys, "
        "vendors' tokens, the server's own secret values) are replaced by a marker "
        "before the client gets it."
    ) in page
    response = client.post(add, {"tenant": world["acme"].pk, "guard_secrets": "on"})
    assert response.status_code == 302
    defaults = PolicyDefaults.objects.get(tenant=world["acme"])
    assert defaults.guard_secrets and not defaults.deny_destructive_to_keys
    change = reverse("admin:toolboxes_policydefaults_change", args=[defaults.pk])
    assert client.post(change, {}).status_code == 302  # unticked: off again
    defaults.refresh_from_db()
    assert not defaults.guard_secrets


def test_who_may_call_this_explains_each_role_member_and_key(client, world):
    from toolboxes.models import Server

    acme = world["acme"]
    server = Server.objects.create(toolbox=world["prod"], name="fs", command="x")
    server.last_check_tools = [
        {"name": "delete_all", "inputSchema": {}, "annotations": {"destructiveHint": True}}
    ]
    server.save()
    tenant_key, _ = ApiKey.issue(acme, label="ci")
    personal, _ = ApiKey.issue(acme, label="mine", owner=world["ada"])
    ToolPolicy.objects.create(
        tenant=acme, toolbox=world["prod"], tool="delete_all", subject="role", role="viewer"
    )
    PolicyDefaults.objects.create(tenant=acme, deny_destructive_to_keys=True)
    client.force_login(world["vic"])  # a viewer may ask
    url = reverse("admin:toolboxes_toolpolicy_who")
    query = {"tenant": acme.pk, "toolbox": "prod", "server": "fs", "tool": "delete_all"}
    response = client.get(url, query)
    assert response.status_code == 200
    verdicts = [(v.who, v.allowed, v.reason) for v in response.context["verdicts"]]
    assert response.context["destructive"] is True
    assert verdicts == [
        ("any admin", True, "allowed: no rule applies"),
        ("any viewer", False, "denied by: toolbox 'prod', tool 'delete_all', role viewer"),
        ("ada (admin)", True, "allowed: no rule applies"),
        ("vic (viewer)", False, "denied by: toolbox 'prod', tool 'delete_all', role viewer"),
        (
            f"{tenant_key} (tenant key)",
            False,
            "denied by: the tenant's default: destructive tools denied to tenant keys",
        ),
        (f"{personal} (personal: ada)", True, "allowed: no rule applies"),
    ]
    assert "denied by: toolbox &#x27;prod&#x27;" in response.content.decode()
    their = {**query, "tenant": Tenant.objects.get(slug="globex").pk}
    assert client.get(url, their).status_code == 404


def test_a_tools_page_shows_each_roles_decision(client, world):
    from toolboxes import pins
    from toolboxes.models import Server, ToolPin

    server = Server.objects.create(toolbox=world["prod"], name="db", command="x")
    pins.record_offer(server, "fp", [{"name": "drop_table", "inputSchema": {}}])
    pin = ToolPin.objects.get(server=server)
    ToolPolicy.objects.create(
        tenant=world["acme"], toolbox=world["prod"], server="db", subject="role", role="viewer"
    )
    client.force_login(world["vic"])
    page = client.get(reverse("admin:toolboxes_toolpin_change", args=[pin.pk]))
    assert page.status_code == 200
    verdicts = [(v.who, v.allowed, v.reason) for v in page.context["role_verdicts"]]
    assert verdicts == [
        ("any admin", True, "allowed: no rule applies"),
        ("any viewer", False, "denied by: toolbox 'prod', server 'db', role viewer"),
    ]
    assert "toolbox=prod&amp;server=db&amp;tool=drop_table" in page.content.decode()


def test_an_ask_rule_with_its_terms_and_approvers(client, world):
    """An ask rule's time, self-approval and named approvers (members of the tenant only);
    terms on an allow or deny rule are refused with the model's text."""
    bob = User.objects.create_user("bob", password="pw-bob-1234", is_staff=True)
    client.force_login(world["ada"])
    url = reverse("admin:toolboxes_toolpolicy_add")
    terms = {"approval_minutes": 30, "self_approval": "on", "approvers": [world["vic"].pk]}
    response = client.post(url, rule_post(world, effect="ask", **terms))
    assert response.status_code == 302, response.content.decode()[:2000]
    rule = ToolPolicy.objects.get(tenant=world["acme"])
    assert (rule.effect, rule.approval_minutes, rule.self_approval) == ("ask", 30, True)
    assert list(rule.approvers.all()) == [world["vic"]]

    page = client.post(url, rule_post(world, tool="rm", effect="deny", **terms)).content.decode()
    assert page.count(texts.TERMS_NEED_ASK) == 3  # the time, self-approval, the approvers
    Membership.objects.create(user=bob, tenant=Tenant.objects.get(slug="globex"), role="admin")
    client.force_login(User.objects.create_superuser("root", password="pw-root-1234"))
    page = client.post(url, rule_post(world, tool="rm", effect="ask", approvers=[bob.pk]))
    assert texts.APPROVERS_NOT_MEMBERS.format(names="bob") in page.content.decode()


def test_the_ask_default_is_one_click_beside_deny_to_keys(client, world):
    client.force_login(world["ada"])
    add = reverse("admin:toolboxes_policydefaults_add")
    form = client.get(add).content.decode()
    assert form.index("id_deny_destructive_to_keys") < form.index("id_ask_destructive")
    response = client.post(add, {"tenant": world["acme"].pk, "ask_destructive": "on"})
    assert response.status_code == 302
    defaults = PolicyDefaults.objects.get(tenant=world["acme"])
    assert defaults.ask_destructive and not defaults.deny_destructive_to_keys


def test_who_may_call_shows_who_approves(client, world):
    rule = ToolPolicy.objects.create(
        tenant=world["acme"], toolbox=world["prod"], tool="drop", effect="ask"
    )
    rule.approvers.add(world["vic"])
    client.force_login(world["ada"])
    query = {"tenant": world["acme"].pk, "toolbox": "prod", "server": "db", "tool": "drop"}
    page = client.get(reverse("admin:toolboxes_toolpolicy_who"), query).content.decode()
    assert "approval required</td>" in page
    assert (
        "approval required by: toolbox &#x27;prod&#x27;, tool &#x27;drop&#x27;, everyone "
        "(approvers: the tenant&#x27;s admins and vic)"
    ) in page


def test_the_approval_webhook_and_its_write_only_secret(client, world):
    client.force_login(world["ada"])
    add = reverse("admin:toolboxes_policydefaults_add")
    hook = {"tenant": world["acme"].pk, "approval_webhook_url": "https://hooks.example.org/x"}
    page = client.post(add, hook).content.decode()
    assert texts.WEBHOOK_NEEDS_SECRET.replace("'", "&#x27;") in page
    assert client.post(add, {**hook, "approval_webhook_secret": "s3cret-hook"}).status_code == 302
    defaults = PolicyDefaults.objects.get(tenant=world["acme"])
    change = reverse("admin:toolboxes_policydefaults_change", args=[defaults.pk])
    assert "s3cret-hook" not in client.get(change).content.decode()
    kept = {**hook, "approval_webhook_url": "https://hooks.example.org/y"}
    assert client.post(change, kept).status_code == 302
    defaults.refresh_from_db()
    assert defaults.approval_webhook_secret == "s3cret-hook"
    assert defaults.approval_webhook_url == "https://hooks.example.org/y"
    client.force_login(world["vic"])
    shown = client.get(change).content.decode()
    assert "s3cret-hook" not in shown and "Webhook signing secret" in shown
    assert '<div class="readonly">set</div>' in shown
