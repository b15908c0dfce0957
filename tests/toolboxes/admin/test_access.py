"""Only staff reach the admin."""

import pytest
from django.urls import reverse

URLS = [
    "admin:index",
    "admin:toolboxes_tenant_changelist",
    "admin:toolboxes_apikey_add",
    "admin:toolboxes_server_changelist",
]


@pytest.mark.parametrize("name", URLS)
def test_anonymous_is_sent_to_login(client, db, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]


@pytest.mark.parametrize("name", URLS)
def test_non_staff_user_is_refused(client, django_user_model, name):
    user = django_user_model.objects.create_user("ann", password="pw-ann-1234")
    client.force_login(user)
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]


def test_superuser_gets_in(admin_client):
    assert admin_client.get(reverse("admin:index")).status_code == 200
