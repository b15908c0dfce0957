"""A key's own limits on its admin page: shown with the installation's value in effect,
set by operators to anything, by a tenant's admin only at most the installation's; and
the key list shows a key's own limits where set."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.accounts.conftest import acme, as_user, globex, people
from toolboxes.models import ApiKey

_ = (acme, as_user, globex, people)


pytestmark = pytest.mark.usefixtures("key_limits_of_the_installation")


def change(client, api_key: ApiKey, **limits):
    data = {
        "label": api_key.label,
        "expires_at_0": "",
        "expires_at_1": "",
        "rate_limit": "",
        "rate_burst": "",
        "open_rate_limit": "",
        "open_rate_burst": "",
    }
    data.update({name: str(value) for name, value in limits.items()})
    return client.post(reverse("admin:toolboxes_apikey_change", args=[api_key.pk]), data)


def errors_of(response) -> dict[str, list[str]]:
    form = response.context["adminform"].form
    return {name: list(messages) for name, messages in form.errors.items()}


def test_the_page_names_the_installations_values(as_user, acme):
    url = reverse("admin:toolboxes_apikey_change", args=[acme.api_key.pk])
    operator = as_user("operator").get(url).content.decode()
    assert (
        "use_tool calls a second. Empty: the installation's, 50 (WORKBENCH_KEY_RATE_LIMIT)."
        " 0: no limit for this key." in operator
    )
    assert "Empty: the installation's, 20 (WORKBENCH_OPEN_KEY_RATE_BURST)." in operator
    admin = as_user("acme_admin").get(url).content.decode()
    assert (
        "use_tool calls a second. Empty: the installation's, 50 (WORKBENCH_KEY_RATE_LIMIT)."
        " At most 50: only operators may raise it." in admin
    )


def test_a_tenant_admin_may_lower_a_key(as_user, acme):
    response = change(as_user("acme_admin"), acme.api_key, rate_limit=0.5, rate_burst=3)
    assert response.status_code == 302, errors_of(response)
    acme.api_key.refresh_from_db()
    assert (acme.api_key.rate_limit, acme.api_key.rate_burst) == (0.5, 3)


def test_a_tenant_admin_may_not_raise_a_key_above_the_installation(as_user, acme):
    response = change(
        as_user("acme_admin"), acme.api_key, rate_limit=51, rate_burst=101, open_rate_limit=0
    )
    assert response.status_code == 200
    assert errors_of(response) == {
        "rate_limit": [
            "Only an operator may set this above the installation's WORKBENCH_KEY_RATE_LIMIT = 50."
        ],
        "rate_burst": [
            "Only an operator may set this above the installation's WORKBENCH_KEY_RATE_BURST = 100."
        ],
        "open_rate_limit": ["Only an operator may lift a key's limit (0: no limit)."],
    }
    acme.api_key.refresh_from_db()
    assert acme.api_key.rate_limit is None


def test_an_operator_may_raise_or_lift_and_a_tenant_admin_keeps_it(as_user, acme):
    response = change(as_user("operator"), acme.api_key, rate_limit=500, open_rate_limit=0)
    assert response.status_code == 302, errors_of(response)
    acme.api_key.refresh_from_db()
    assert (acme.api_key.rate_limit, acme.api_key.open_rate_limit) == (500, 0)
    # Left as it was, an operator's value passes a tenant admin's save of the label.
    acme.api_key.label = "renamed"
    response = change(as_user("acme_admin"), acme.api_key, rate_limit=500, open_rate_limit=0)
    assert response.status_code == 302, errors_of(response)
    # Changed, it must be at most the installation's again.
    response = change(as_user("acme_admin"), acme.api_key, rate_limit=400, open_rate_limit=0)
    assert errors_of(response) == {
        "rate_limit": [
            "Only an operator may set this above the installation's WORKBENCH_KEY_RATE_LIMIT = 50."
        ],
    }


def test_values_below_the_bounds_are_refused_for_everyone(as_user, acme):
    response = change(as_user("operator"), acme.api_key, rate_limit=-1, rate_burst=0)
    assert errors_of(response) == {
        "rate_limit": ["Ensure this value is greater than or equal to 0."],
        "rate_burst": ["Ensure this value is greater than or equal to 1."],
    }


def test_with_no_installation_limit_a_tenant_admin_may_set_any_positive(settings, as_user, acme):
    settings.WORKBENCH_KEY_RATE_LIMIT = 0.0
    response = change(as_user("acme_admin"), acme.api_key, rate_limit=1000, rate_burst=5000)
    assert response.status_code == 302, errors_of(response)
    url = reverse("admin:toolboxes_apikey_change", args=[acme.api_key.pk])
    page = as_user("acme_admin").get(url).content.decode()
    assert "Empty: the installation's, no limit (WORKBENCH_KEY_RATE_LIMIT = 0)." in page


def test_the_key_list_shows_a_keys_own_limits(as_user, acme):
    ApiKey.issue(acme.tenant, label="slow", rate_limit=0.5, rate_burst=2, open_rate_limit=0)
    html = as_user("acme_admin").get(reverse("admin:toolboxes_apikey_changelist"))
    html = html.content.decode()
    assert "<span>Own limits</span>" in html
    assert (
        '<td class="field-own_limits">use_tool 0.5/s, burst 2; open_toolbox no limit</td>' in html
    )
    assert '<td class="field-own_limits">-</td>' in html  # acme-key: the installation's
