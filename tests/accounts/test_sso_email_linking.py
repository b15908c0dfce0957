"""Issue 31, finding 6: signing in by e-mail could take over a privileged account. With a
provider marked `emails_verified`, a first sign-in linked to any existing user with that
address, superusers and operators included; and a group mapping to the operators without
a provider applied to every provider.

Now a privileged account (a superuser, an operator, a break-glass user) is never linked by
e-mail (the person is told why, nobody is signed in), and a mapping to the operators must
name its provider: refused by the admin, the model and the settings check; the rows saved
before, which name none, make nobody an operator and are named by a system check."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.checks import Warning as CheckWarning
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.test import Client

from accounts.models import SsoGroupMapping, SsoIdentity
from accounts.sso import discovery
from accounts.sso.group_mapping import Rule, wanted
from accounts.sso.providers import check
from kernel.roles import OPERATORS_GROUP
from tests.accounts.sso_walk import callback_of, sign_in, text_of
from tests.harness.oidc import IdP, running_idp
from toolboxes.models import Tenant

pytestmark = [pytest.mark.django_db, pytest.mark.once_pg]

TAKEOVER_REFUSED = (
    "Corp IdP signed you in as {email}, but that address belongs to a privileged Workbench "
    "account (a superuser, an operator or a break-glass user), which a sign-in never takes "
    "over by e-mail: nobody was signed in. Sign in to that account with its password, or ask "
    "a Workbench operator."
)
NEEDS_PROVIDER = (
    "A mapping to the operators must name its provider: a group of that name at any other "
    "provider would make operators too."
)


@pytest.fixture(scope="module")
def idp() -> Iterator[IdP]:
    with running_idp() as provider:
        provider.register([callback_of("corp"), callback_of("partner")])
        yield provider


@pytest.fixture
def corp(idp: IdP, settings: Any) -> IdP:
    """Two providers (the same test IdP under two names: what matters is the name a
    mapping gives), the first trusted for e-mail addresses."""
    discovery.forget()
    settings.WORKBENCH_OIDC_PROVIDERS = [
        idp.settings_entry(emails_verified=True),
        {**idp.settings_entry(name="partner"), "title": "Partner IdP"},
    ]
    settings.WORKBENCH_OIDC_GROUP_MAPPINGS = [
        {"group": "wb-acme-admins", "tenant": "acme", "role": "admin"}
    ]
    Tenant.objects.create(slug="acme", name="Acme")
    return idp


def _superuser(email: str, settings: Any) -> User:
    return User.objects.create_superuser("root", email=email, password="pw-root-local-1")


def _operator(email: str, settings: Any) -> User:
    user = User.objects.create_user("olga", email=email, is_staff=True)
    user.groups.add(Group.objects.get_or_create(name=OPERATORS_GROUP)[0])
    return user


def _break_glass(email: str, settings: Any) -> User:
    settings.WORKBENCH_BREAK_GLASS_USERS = ["glass"]
    return User.objects.create_user("glass", email=email, is_staff=True)


@pytest.mark.parametrize("make", [_superuser, _operator, _break_glass])
def test_a_verified_email_never_takes_over_a_privileged_account(
    corp: IdP, settings: Any, make: Any
) -> None:
    """The attack: someone whose account at the provider carries the operator's address
    (verified, as the provider says) signs in for the first time."""
    email = "u-root@corp.example"
    victim = make(email, settings)
    corp.person("u-root", ["wb-acme-admins"], email_verified=True)
    client = Client()
    answer = sign_in(client, "u-root")
    assert answer.status_code == 403
    assert TAKEOVER_REFUSED.format(email=email) in text_of(answer)
    assert client.get("/admin/").status_code == 302  # nobody signed in
    assert not SsoIdentity.objects.exists()  # nothing linked, no user made
    assert list(User.objects.values_list("username", flat=True)) == [victim.username]


def test_an_ordinary_account_is_still_linked_by_a_verified_email(corp: IdP, settings: Any) -> None:
    settings.WORKBENCH_BREAK_GLASS_USERS = ["glass"]
    local = User.objects.create_user("carol", email="u-carol@corp.example", is_staff=True)
    corp.person("u-carol", ["wb-acme-admins"], email_verified=True)
    assert sign_in(Client(), "u-carol").status_code == 302
    assert SsoIdentity.objects.get(subject="u-carol").user == local


def test_an_operators_mapping_without_a_provider_makes_nobody_an_operator(corp: IdP) -> None:
    """The attack: a group of that name at another provider (one whose groups its users
    or another company control) made operators. Such a row, saved before the fix, now
    makes nobody an operator; a mapping that names its provider makes operators there only."""
    SsoGroupMapping.objects.create(group="platform-team", operators=True)  # as saved before
    corp.person("u-pat", ["wb-acme-admins", "platform-team"])
    assert sign_in(Client(), "u-pat", provider="partner").status_code == 302
    user = SsoIdentity.objects.get(subject="u-pat").user
    assert not user.groups.filter(name=OPERATORS_GROUP).exists()

    SsoGroupMapping.objects.create(group="platform-team", provider="corp", operators=True)
    corp.person("u-quin", ["wb-acme-admins", "platform-team"])
    assert sign_in(Client(), "u-pat", provider="partner").status_code == 302
    assert not user.groups.filter(name=OPERATORS_GROUP).exists()
    assert sign_in(Client(), "u-quin", provider="corp").status_code == 302
    operator = SsoIdentity.objects.get(subject="u-quin").user
    assert operator.groups.filter(name=OPERATORS_GROUP).exists()


def test_a_rule_to_the_operators_without_a_provider_matches_nothing() -> None:
    rules = [Rule("platform-*", operators=True), Rule("wb-*", tenant_id=7)]
    found = wanted("corp", ["platform-team", "wb-acme"], rules)
    assert found.operator is False and found.tenants == {7: ("viewer", "wb-acme")}
    assert wanted("corp", ["platform-team"], [Rule("platform-*", "corp", operators=True)]).operator


def test_the_settings_refuse_an_operators_mapping_without_a_provider() -> None:
    with pytest.raises(ImproperlyConfigured) as raised:
        check([], [{"group": "wb-acme", "tenant": "acme"}, {"group": "ops", "operators": True}])
    assert str(raised.value) == (
        "WORKBENCH_OIDC_GROUP_MAPPINGS[1]: a mapping to the operators must name its provider."
    )
    check([], [{"group": "ops", "operators": True, "provider": "corp"}])  # accepted


def test_the_admin_and_the_model_refuse_an_operators_mapping_without_a_provider(
    corp: IdP,
) -> None:
    operator = Client()
    operator.force_login(User.objects.create_superuser("olga"))
    add = "/admin/accounts/ssogroupmapping/add/"
    refused = operator.post(
        add, {"provider": "", "group": "platform", "role": "viewer", "operators": "on"}
    )
    assert refused.status_code == 200 and NEEDS_PROVIDER in text_of(refused)
    assert not SsoGroupMapping.objects.exists()
    saved = operator.post(
        add, {"provider": "corp", "group": "platform", "role": "viewer", "operators": "on"}
    )
    assert saved.status_code == 302
    assert SsoGroupMapping.objects.get().provider == "corp"
    with pytest.raises(ValidationError) as raised:
        SsoGroupMapping(group="platform", operators=True).full_clean()
    assert raised.value.message_dict == {"provider": [NEEDS_PROVIDER]}
    tenant_wide = SsoGroupMapping(group="wb-*", tenant=Tenant.objects.get(slug="acme"))
    tenant_wide.full_clean()  # a tenant's mapping may still apply to every provider


def test_a_system_check_names_the_operators_mappings_saved_without_a_provider() -> None:
    old = SsoGroupMapping.objects.create(group="platform-team", operators=True)
    SsoGroupMapping.objects.create(group="sre", provider="corp", operators=True)
    found = [m for m in run_checks(include_deployment_checks=False) if m.id == "accounts.W001"]
    assert found == [
        CheckWarning(
            f"The group mapping {old.pk} (platform-team → operators) names no provider: it "
            "makes nobody an operator until it names one.",
            hint="Choose its provider in the admin (People and access > Group mappings).",
            obj=old,
            id="accounts.W001",
        )
    ]
