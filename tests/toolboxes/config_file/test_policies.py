"""Tool policies in the configuration document: exported beside the toolboxes only when
the tenant has some, imported all or nothing with the problem named by its JSON path, a
document without them leaving them as they are, and the plan naming them."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from accounts.models import Membership
from toolboxes.config_file import ConfigError, export_tenant, import_tenant
from toolboxes.config_file.plan import POLICIES, plan_of
from toolboxes.models import ApiKey, PolicyDefaults, Server, Tenant, Toolbox, ToolPolicy


@pytest.fixture
def acme(db) -> Tenant:
    tenant = Tenant.objects.create(slug="acme")
    prod = Toolbox.objects.create(tenant=tenant, name="prod", description="p")
    Server.objects.create(toolbox=prod, name="db", command="x")
    ada = get_user_model().objects.create_user("ada")
    Membership.objects.create(user=ada, tenant=tenant, role="admin")
    return tenant


def rules_document(tenant: Tenant) -> dict:
    key, _ = ApiKey.issue(tenant, label="ci")
    return {
        "denyDestructiveToKeys": True,
        "rules": [
            {
                "toolbox": "prod",
                "server": "db",
                "tool": "drop_table",
                "role": "viewer",
                "effect": "deny",
            },
            {"tool": "drop_table", "key": key.prefix, "effect": "allow"},
            {"toolbox": "prod", "person": "ada", "effect": "allow"},
            {"group": "wb-ops", "effect": "deny"},
            {"toolbox": "prod", "effect": "deny"},
        ],
    }


def test_no_policies_no_key(acme):
    assert "policies" not in export_tenant(acme)


def test_a_round_trip_and_the_plan(acme):
    before = export_tenant(acme)
    policies = rules_document(acme)
    import_tenant(acme, {**before, "policies": policies}, replace=True)
    assert ToolPolicy.objects.filter(tenant=acme).count() == 5
    assert PolicyDefaults.objects.get(tenant=acme).deny_destructive_to_keys
    after = export_tenant(acme)
    assert after["policies"] == policies
    assert plan_of(before, after).changed == {POLICIES: ["denyDestructiveToKeys", "rules"]}
    # The same document again changes nothing.
    import_tenant(acme, after, replace=True)
    assert plan_of(after, export_tenant(acme)).empty


def test_a_document_without_policies_leaves_them(acme):
    ToolPolicy.objects.create(tenant=acme, tool="rm")
    document = export_tenant(acme)
    del document["policies"]
    import_tenant(acme, document, replace=True)
    assert ToolPolicy.objects.filter(tenant=acme, tool="rm").exists()
    import_tenant(acme, {**document, "policies": {"rules": []}}, replace=True)
    assert not ToolPolicy.objects.filter(tenant=acme).exists()
    assert "policies" not in export_tenant(acme)


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        (
            {"server": "db", "effect": "deny"},
            "policies.rules[0].server: A server is named within a toolbox: choose the toolbox too.",
        ),
        ({"toolbox": "dev", "effect": "deny"}, "policies.rules[0].toolbox: no toolbox 'dev'"),
        (
            {"toolbox": "prod", "server": "web", "effect": "deny"},
            "policies.rules[0].server: Toolbox 'prod' has no server named 'web'.",
        ),
        ({"person": "olga", "effect": "deny"}, "policies.rules[0].person: 'olga' is not a member"),
        ({"key": "zzzzzzzz", "effect": "deny"}, "policies.rules[0].key: no API key 'zzzzzzzz'"),
        (
            {"role": "viewer", "group": "x", "effect": "deny"},
            "policies.rules[0]: name one of role, group, not several",
        ),
        (
            {"effect": "maybe"},
            "policies.rules[0].effect: must be one of 'allow', 'deny' or 'ask'",
        ),
        (
            {"effect": "deny", "selfApproval": True},
            "policies.rules[0].selfApproval: Only an ask rule has approval terms: choose the "
            "effect ask, or leave this empty.",
        ),
        (
            {"effect": "allow", "approvers": ["ada"]},
            "policies.rules[0].approvers: Only an ask rule has approval terms: choose the "
            "effect ask, or leave this empty.",
        ),
        (
            {"effect": "ask", "approvers": ["olga", "ada"]},
            "policies.rules[0].approvers: Approvers must be members of this tenant: olga.",
        ),
        (
            {"effect": "ask", "approvalMinutes": 0},
            "policies.rules[0].approvalMinutes: Ensure this value is greater than or equal to 1.",
        ),
        ({"tool": "rm"}, "policies.rules[0].effect: is required"),
    ],
)
def test_a_bad_rule_imports_nothing(acme, rule, text):
    document = export_tenant(acme)
    ToolPolicy.objects.create(tenant=acme, tool="kept")
    with pytest.raises(ConfigError) as error:
        import_tenant(acme, {**document, "policies": {"rules": [rule]}}, replace=True)
    assert str(error.value) == text
    assert list(ToolPolicy.objects.values_list("tool", flat=True)) == ["kept"]


def test_a_duplicate_rule_is_named(acme):
    document = export_tenant(acme)
    rules = [{"tool": "rm", "effect": "deny"}, {"tool": "rm", "effect": "allow"}]
    with pytest.raises(ConfigError) as error:
        import_tenant(acme, {**document, "policies": {"rules": rules}}, replace=True)
    assert str(error.value) == (
        "policies.rules[1]: This tenant already has a rule for this scope and subject: "
        "change its effect instead."
    )


def test_ask_rules_and_the_ask_default_round_trip(acme):
    before = export_tenant(acme)
    policies = {
        "denyDestructiveToKeys": False,
        "askDestructive": True,
        "rules": [
            {"toolbox": "prod", "tool": "drop_table", "effect": "ask"},
            {
                "tool": "deploy",
                "effect": "ask",
                "approvalMinutes": 30,
                "selfApproval": True,
                "approvers": ["ada"],
            },
        ],
    }
    import_tenant(acme, {**before, "policies": policies}, replace=True)
    assert PolicyDefaults.objects.get(tenant=acme).ask_destructive
    deploy = ToolPolicy.objects.get(tenant=acme, tool="deploy")
    assert (deploy.effect, deploy.approval_minutes, deploy.self_approval) == ("ask", 30, True)
    assert [person.username for person in deploy.approvers.all()] == ["ada"]
    after = export_tenant(acme)
    assert after["policies"] == policies
    assert plan_of(before, after).changed == {POLICIES: ["askDestructive", "rules"]}
    import_tenant(acme, after, replace=True)
    assert plan_of(after, export_tenant(acme)).empty
