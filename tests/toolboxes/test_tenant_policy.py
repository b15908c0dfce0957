"""A tenant's tool policies as one value (`toolboxes.policies`, which the gateway's
snapshot and the admin read): its rules, defaults and members' roles and groups, and a
change of groups at a sign-in moving the tenant's version."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache

from accounts.models import Membership, SsoIdentity
from kernel import tool_policy
from toolboxes import versions
from toolboxes.models import PolicyDefaults, Tenant, Toolbox, ToolPolicy
from toolboxes.policies import tenant_policy


@pytest.fixture
def acme(db) -> Tenant:
    return Tenant.objects.create(slug="acme")


def test_no_rules_no_defaults_is_the_empty_policy(acme):
    assert tenant_policy(acme) is tool_policy.EMPTY


def test_rules_defaults_roles_and_groups(acme):
    prod = Toolbox.objects.create(tenant=acme, name="prod", description="p")
    anna = get_user_model().objects.create_user("anna")
    Membership.objects.create(user=anna, tenant=acme, role="admin")
    SsoIdentity.objects.create(
        user=anna, provider="corp", issuer="https://idp", subject="1", groups=["wb-ops", 7]
    )
    rule = ToolPolicy.objects.create(tenant=acme, toolbox=prod, subject="group", group="wb-ops")
    PolicyDefaults.objects.create(tenant=acme, deny_destructive_to_keys=True)
    policy = tenant_policy(acme)
    assert policy.rules == (tool_policy.Rule("deny", "group", "wb-ops", "prod", rule_id=rule.pk),)
    assert policy.defaults == tool_policy.Defaults(deny_destructive_to_keys=True)
    assert dict(policy.members) == {anna.pk: ("admin", frozenset({"wb-ops"}))}
    decision = policy.decide(policy.subject(None, anna.pk), "prod", "fs", "rm")
    assert decision.reason == "denied by: toolbox 'prod', group 'wb-ops'"


def test_groups_changed_at_a_sign_in_move_the_version(acme, django_capture_on_commit_callbacks):
    anna = get_user_model().objects.create_user("anna")
    Membership.objects.create(user=anna, tenant=acme, role="admin")
    identity = SsoIdentity.objects.create(
        user=anna, provider="corp", issuer="https://idp", subject="1", groups=["a"]
    )
    key = versions.version_key(acme.pk)
    cache.set(key, 1)
    with django_capture_on_commit_callbacks(execute=True):
        identity.last_checked_at = None
        identity.save()  # the same groups: nothing to reload
    assert cache.get(key) == 1
    identity = SsoIdentity.objects.get(pk=identity.pk)
    with django_capture_on_commit_callbacks(execute=True):
        identity.groups = ["a", "b"]
        identity.save()
    assert cache.get(key) != 1
