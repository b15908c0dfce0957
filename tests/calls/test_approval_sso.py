"""The approval page's link through the site's single sign-on (a real OpenID provider,
npm's oidc-provider, as tests/accounts/test_sso.py starts it): the login page's provider
button carries the page along, and the person comes back to it, signed in, able to decide
(their groups made them the tenant's admin)."""

from __future__ import annotations

import html
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from calls.models import Approval
from kernel import approvals
from tests.accounts.sso_walk import callback_of
from tests.accounts.test_sso import corp, idp  # noqa: F401  (the provider's fixtures)
from tests.harness.oidc import IdP, sign_in_at_provider
from toolboxes.models import Tenant

pytestmark = [pytest.mark.django_db, pytest.mark.once_pg]


def test_the_link_goes_through_the_provider_and_back(corp: IdP) -> None:  # noqa: F811
    approval = Approval.objects.create(
        tenant=Tenant.objects.get(slug="acme"),
        caller="key:1",
        caller_label="wb_ab12cd34 (ci)",
        toolbox="dev",
        server="filesystem",
        tool="delete_file",
        arguments_digest=approvals.arguments_digest({}),
        reason="approval required by: the tenant's default",
        expires_at=timezone.now() + timedelta(minutes=10),
    )
    path = approvals.PAGE_PATH.format(public_id=approval.public_id)
    corp.person("u-ida", ["wb-acme-admins"])
    client = Client()
    login = client.get(path)["Location"]
    assert login == f"/admin/login/?next={path}"
    page = html.unescape(client.get(login).content.decode())
    start = f"/sso/corp/login?next={path}"
    assert f'href="{start}"' in page
    sent = client.get(start)
    assert sent.status_code == 302
    back = urlsplit(sign_in_at_provider(sent["Location"], "u-ida", callback_of("corp")))
    returned = client.get(f"{back.path}?{back.query}")
    assert returned.status_code == 302 and returned["Location"] == path
    shown = client.get(path).content.decode()
    assert 'id="approve"' in shown and "delete_file" in shown
