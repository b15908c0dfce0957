"""Tool policies and their defaults through the management API: CRUD with the model's
exact texts, names resolved within the tenant, another tenant's rule 404, a viewer
refused a write."""

from __future__ import annotations

from tests.api.conftest import problem
from toolboxes.models import PolicyDefaults, ToolPolicy
from toolboxes.models import policies as texts

BASE = "/tenants/acme/policies"
NO_WEBHOOK = {"approval_webhook_url": "", "approval_webhook_secret_set": False}


def test_an_admin_creates_reads_changes_and_deletes_a_rule(api, acme):
    admin = api("acme_admin")
    body = {
        "toolbox": "acme-tools",
        "server": "acme-time",
        "tool": "rm",
        "subject": "role",
        "role": "viewer",
    }
    created = admin("POST", BASE, body)
    assert created.status_code == 201, created.content
    rule = created.json()
    assert rule | {"id": 0} == {
        "id": 0,
        "toolbox": "acme-tools",
        "server": "acme-time",
        "tool": "rm",
        "subject": "role",
        "role": "viewer",
        "group": "",
        "person": None,
        "key": None,
        "effect": "deny",
        "approval_minutes": 10,
        "self_approval": False,
        "approvers": [],
        "explained": "toolbox 'acme-tools', server 'acme-time', tool 'rm', role viewer: deny",
    }
    assert admin("GET", BASE).json()["items"] == [rule]
    path = f"{BASE}/{rule['id']}"
    assert admin("GET", path).json() == rule
    changed = admin("PATCH", path, {"effect": "allow"})
    assert changed.status_code == 200 and changed.json()["effect"] == "allow"
    person = admin("PATCH", path, {"subject": "person", "role": "", "person": "ada"})
    assert person.json()["explained"].endswith("person ada: allow")
    key = admin(
        "PATCH", path, {"subject": "key", "person": None, "key": acme.api_key.prefix}
    ).json()
    assert key["key"] == acme.api_key.prefix
    assert admin("DELETE", path).status_code == 204
    assert not ToolPolicy.objects.exists()


def test_the_models_texts_and_names_within_the_tenant(api, acme, globex):
    admin = api("acme_admin")
    response = admin("POST", BASE, {"server": "acme-time"})
    body = problem(response, 422, "1 invalid field.")
    assert body["errors"] == [{"field": "server", "message": texts.SERVER_NEEDS_TOOLBOX}]
    response = admin("POST", BASE, {"toolbox": "globex-tools"})
    assert problem(response, 422, "1 invalid field.")["errors"] == [
        {"field": "toolbox", "message": "This tenant has no toolbox 'globex-tools'."}
    ]
    response = admin("POST", BASE, {"subject": "key", "key": globex.api_key.prefix})
    assert problem(response, 422, "1 invalid field.")["errors"] == [
        {"field": "key", "message": f"This tenant has no API key '{globex.api_key.prefix}'."}
    ]
    response = admin("POST", BASE, {"subject": "person", "person": "gus"})
    assert problem(response, 422, "1 invalid field.")["errors"] == [
        {"field": "person", "message": "'gus' is not a member of this tenant."}
    ]
    response = admin("POST", BASE, {"subject": "role"})
    assert problem(response, 422, "1 invalid field.")["errors"] == [
        {"field": "role", "message": "Choose the role this rule is for."}
    ]
    assert admin("POST", BASE, {"tool": "rm"}).status_code == 201
    response = admin("POST", BASE, {"tool": "rm", "effect": "allow"})
    assert problem(response, 422, "1 invalid field.")["errors"] == [
        {"field": "", "message": texts.DUPLICATE}
    ]


def test_another_tenants_rule_is_404_and_a_viewer_cannot_write(api, acme, globex):
    theirs = ToolPolicy.objects.create(tenant=globex.tenant, tool="rm")
    admin = api("acme_admin")
    problem(admin("GET", f"{BASE}/{theirs.pk}"), 404, f"No policy '{theirs.pk}'.")
    problem(admin("GET", f"/tenants/globex/policies/{theirs.pk}"), 404, "No tenant 'globex'.")
    viewer = api("acme_viewer")
    assert viewer("GET", BASE).status_code == 200
    assert viewer("POST", BASE, {"tool": "rm"}).status_code == 403
    assert (
        viewer(
            "PUT", "/tenants/acme/policy-defaults", {"deny_destructive_to_keys": True}
        ).status_code
        == 403
    )


def test_the_defaults_are_read_and_set(api, acme):
    admin = api("acme_admin")
    path = "/tenants/acme/policy-defaults"
    off = {"deny_destructive_to_keys": False, "ask_destructive": False, "guard_secrets": False}
    off |= NO_WEBHOOK
    assert admin("GET", path).json() == off
    assert admin("PUT", path, {"deny_destructive_to_keys": True}).json() == {
        **off,
        "deny_destructive_to_keys": True,
    }
    assert PolicyDefaults.objects.get(tenant=acme.tenant).deny_destructive_to_keys
    assert admin("GET", path).json() == {**off, "deny_destructive_to_keys": True}
    asked = admin("PUT", path, {"deny_destructive_to_keys": False, "ask_destructive": True})
    assert asked.json() == {**off, "ask_destructive": True}
    assert PolicyDefaults.objects.get(tenant=acme.tenant).ask_destructive


def test_the_secrets_guard_is_switched_on_and_off(api, acme):
    admin = api("acme_admin")
    path = "/tenants/acme/policy-defaults"
    on = {"deny_destructive_to_keys": False, "ask_destructive": False, "guard_secrets": True}
    assert admin("PUT", path, on).json() == on | NO_WEBHOOK
    assert PolicyDefaults.objects.get(tenant=acme.tenant).guard_secrets
    assert admin("GET", path).json() == on | NO_WEBHOOK
    document = admin("GET", "/tenants/acme/config").json()
    assert document["policies"] == {
        "denyDestructiveToKeys": False,
        "guardSecrets": True,
        "rules": [],
    }
    document["policies"]["guardSecrets"] = False
    dry = admin("PUT", "/tenants/acme/config?dry_run=true", document).json()
    assert dry["changed"] == [{"name": "tool policies", "fields": ["guardSecrets"]}]
    admin("PUT", "/tenants/acme/config", document)
    assert not PolicyDefaults.objects.get(tenant=acme.tenant).guard_secrets
    assert admin("GET", path).json() == {**on, "guard_secrets": False} | NO_WEBHOOK
    assert "policies" not in admin("GET", "/tenants/acme/config").json()


def test_the_secrets_guard_switch_is_a_boolean(api, acme):
    admin = api("acme_admin")
    response = admin(
        "PUT",
        "/tenants/acme/policy-defaults",
        {"deny_destructive_to_keys": False, "guard_secrets": "maybe"},
    )
    assert response.status_code == 422


def test_the_configuration_document_carries_the_policies_with_a_dry_run(api, acme):
    admin = api("acme_admin")
    document = admin("GET", "/tenants/acme/config").json()
    assert "policies" not in document
    document["policies"] = {"rules": [{"toolbox": "acme-tools", "tool": "rm", "effect": "deny"}]}
    dry = admin("PUT", "/tenants/acme/config?dry_run=true", document).json()
    assert dry["applied"] is False
    assert dry["changed"] == [{"name": "tool policies", "fields": ["rules"]}]
    assert not ToolPolicy.objects.exists()
    applied = admin("PUT", "/tenants/acme/config", document).json()
    assert applied["applied"] is True
    assert ToolPolicy.objects.get().tool == "rm"
    assert admin("GET", "/tenants/acme/config").json()["policies"] == {
        "denyDestructiveToKeys": False,
        "rules": [{"toolbox": "acme-tools", "tool": "rm", "effect": "deny"}],
    }
    document["policies"]["rules"][0]["server"] = "nope"
    response = admin("PUT", "/tenants/acme/config", document)
    assert problem(response, 422, "The configuration is not valid.")["errors"] == [
        {
            "field": "policies.rules[0].server",
            "message": "Toolbox 'acme-tools' has no server named 'nope'.",
        }
    ]


def test_an_ask_rule_names_its_approvers_by_username(api, acme, globex):
    admin = api("acme_admin")
    body = {"toolbox": "acme-tools", "tool": "rm", "effect": "ask", "approval_minutes": 30}
    created = admin("POST", BASE, {**body, "self_approval": True, "approvers": ["ada"]})
    assert created.status_code == 201, created.content
    rule = created.json()
    assert (rule["effect"], rule["approval_minutes"], rule["self_approval"]) == ("ask", 30, True)
    assert rule["approvers"] == ["ada"]
    assert rule["explained"] == "toolbox 'acme-tools', tool 'rm', everyone: ask"
    path = f"{BASE}/{rule['id']}"
    assert admin("PATCH", path, {"approvers": []}).json()["approvers"] == []
    assert list(ToolPolicy.objects.get().approvers.all()) == []

    response = admin("POST", BASE, {**body, "tool": "mv", "approvers": ["gus", "zed"]})
    assert problem(response, 422, "1 invalid field.")["errors"] == [
        {"field": "approvers", "message": texts.APPROVERS_NOT_MEMBERS.format(names="gus, zed")}
    ]
    response = admin("POST", BASE, {"tool": "mv", "effect": "deny", "self_approval": True})
    assert problem(response, 422, "1 invalid field.")["errors"] == [
        {"field": "self_approval", "message": texts.TERMS_NEED_ASK}
    ]
    response = admin("POST", BASE, {"tool": "mv", "effect": "allow", "approvers": ["ada"]})
    assert problem(response, 422, "1 invalid field.")["errors"] == [
        {"field": "approvers", "message": texts.TERMS_NEED_ASK}
    ]
    response = admin("POST", BASE, {**body, "tool": "mv", "approval_minutes": 0})
    assert response.status_code == 422


def test_the_approval_webhook_and_its_write_only_secret(api, acme):
    admin = api("acme_admin")
    path = "/tenants/acme/policy-defaults"
    hook = {"deny_destructive_to_keys": False, "approval_webhook_url": "https://hooks.example/a"}
    response = admin("PUT", path, hook)
    assert problem(response, 422, "1 invalid field.")["errors"] == [
        {"field": "approval_webhook_secret", "message": texts.WEBHOOK_NEEDS_SECRET}
    ]
    stored = admin("PUT", path, {**hook, "approval_webhook_secret": "s3cret-signing"})
    assert stored.status_code == 200
    assert stored.json()["approval_webhook_url"] == "https://hooks.example/a"
    assert stored.json()["approval_webhook_secret_set"] is True
    assert "s3cret-signing" not in stored.text and "s3cret-signing" not in admin("GET", path).text
    moved = admin("PUT", path, {**hook, "approval_webhook_url": "https://hooks.example/b"})
    assert moved.json()["approval_webhook_secret_set"] is True
    row = PolicyDefaults.objects.get(tenant=acme.tenant)
    assert (row.approval_webhook_url, row.approval_webhook_secret) == (
        "https://hooks.example/b",
        "s3cret-signing",
    )
    bad = admin("PUT", path, {**hook, "approval_webhook_url": "not a url"})
    assert problem(bad, 422, "1 invalid field.")["errors"] == [
        {"field": "approval_webhook_url", "message": "Enter a valid URL."}
    ]
