"""Tool policies as the admins save them: each rule's validation with its exact text, the
row as the decision reads it, and a change moving the tenant's configuration version."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.exceptions import ValidationError

from accounts.models import Membership
from kernel import tool_policy
from toolboxes import versions
from toolboxes.models import ApiKey, PolicyDefaults, Server, Tenant, Toolbox, ToolPolicy, policies


@pytest.fixture
def world(db):
    acme = Tenant.objects.create(slug="acme")
    other = Tenant.objects.create(slug="other")
    prod = Toolbox.objects.create(tenant=acme, name="prod", description="p")
    foreign = Toolbox.objects.create(tenant=other, name="prod", description="p")
    Server.objects.create(toolbox=prod, name="fs", command="x")
    anna = get_user_model().objects.create_user("anna")
    Membership.objects.create(user=anna, tenant=acme, role="viewer")
    key, _ = ApiKey.issue(acme, label="ci")
    foreign_key, _ = ApiKey.issue(other, label="theirs")
    return {
        "acme": acme,
        "prod": prod,
        "foreign": foreign,
        "anna": anna,
        "key": key,
        "foreign_key": foreign_key,
    }


def errors_of(rule: ToolPolicy) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as error:
        rule.full_clean()
    return error.value.message_dict


def test_a_server_without_its_toolbox(world):
    rule = ToolPolicy(tenant=world["acme"], server="fs", effect="deny")
    assert errors_of(rule) == {"server": [policies.SERVER_NEEDS_TOOLBOX]}


def test_a_server_the_toolbox_does_not_have(world):
    rule = ToolPolicy(tenant=world["acme"], toolbox=world["prod"], server="gone")
    assert errors_of(rule) == {"server": ["Toolbox 'prod' has no server named 'gone'."]}


def test_another_tenants_toolbox_key_or_person(world):
    outsider = get_user_model().objects.create_user("olga")
    assert errors_of(ToolPolicy(tenant=world["acme"], toolbox=world["foreign"])) == {
        "toolbox": [policies.FOREIGN_TOOLBOX]
    }
    rule = ToolPolicy(tenant=world["acme"], subject="key", api_key=world["foreign_key"])
    assert errors_of(rule) == {"api_key": [policies.FOREIGN_KEY]}
    rule = ToolPolicy(tenant=world["acme"], subject="person", person=outsider)
    assert errors_of(rule) == {"person": [policies.NOT_A_MEMBER]}


@pytest.mark.parametrize(
    ("subject", "field", "text"),
    [
        ("role", "role", "Choose the role this rule is for."),
        ("group", "group", "Name the identity provider's group this rule is for."),
        ("person", "person", "Choose the member this rule is for."),
        ("key", "api_key", "Choose the API key this rule is for."),
    ],
)
def test_each_subject_names_its_one_value(world, subject, field, text):
    assert errors_of(ToolPolicy(tenant=world["acme"], subject=subject)) == {field: [text]}


def test_values_of_another_subject_kind_are_refused(world):
    rule = ToolPolicy(tenant=world["acme"], subject="role", role="viewer", group="wb-ops")
    assert errors_of(rule) == {"group": ["Leave this empty: the rule is for a role."]}


def test_a_duplicate_rule(world):
    ToolPolicy.objects.create(
        tenant=world["acme"], toolbox=world["prod"], subject="role", role="viewer"
    )
    again = ToolPolicy(
        tenant=world["acme"], toolbox=world["prod"], subject="role", role="viewer", effect="allow"
    )
    assert errors_of(again) == {"__all__": [policies.DUPLICATE]}
    # The same subject elsewhere is another rule.
    ToolPolicy(tenant=world["acme"], subject="role", role="viewer").full_clean()


def test_the_row_as_the_decision_reads_it(world):
    rule = ToolPolicy(
        tenant=world["acme"],
        toolbox=world["prod"],
        server="fs",
        tool="rm",
        subject="key",
        api_key=world["key"],
        effect="deny",
    )
    rule.full_clean()
    rule.save()
    read = rule.as_rule()
    assert read == tool_policy.Rule(
        "deny", "key", str(world["key"].pk), "prod", "fs", "rm", str(world["key"]), rule.pk
    )
    person = ToolPolicy(tenant=world["acme"], subject="person", person=world["anna"])
    assert person.as_rule().subject_text() == "person anna"
    assert str(rule) == f"toolbox 'prod', server 'fs', tool 'rm', key {world['key']}: deny"


def test_a_database_refuses_a_server_without_a_toolbox(world):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        ToolPolicy.objects.create(tenant=world["acme"], server="fs")


def test_a_change_of_rules_or_defaults_moves_the_tenants_version(
    world, django_capture_on_commit_callbacks
):
    acme = world["acme"]
    key = versions.version_key(acme.pk)
    cache.delete(key)
    with django_capture_on_commit_callbacks(execute=True):
        ToolPolicy.objects.create(tenant=acme, effect="deny")
    first = cache.get(key)
    assert first is not None
    with django_capture_on_commit_callbacks(execute=True):
        PolicyDefaults.objects.create(tenant=acme, deny_destructive_to_keys=True)
    assert cache.get(key) != first
    assert acme.policy_defaults.as_defaults() == tool_policy.Defaults(True)
