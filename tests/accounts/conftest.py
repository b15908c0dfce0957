"""Two tenants, each with a toolbox, a server holding secrets and a key; and the people:
an operator (by group, not superuser), an admin and a viewer of `acme`, an admin of
`globex`, and a user who administers `acme` but only views `globex`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from accounts.models import Membership
from kernel.roles import OPERATORS_GROUP
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

SECRET = "tok-acme-secret-value"
OTHER_SECRET = "tok-globex-secret-value"


@dataclass
class TenantObjects:
    tenant: Tenant
    toolbox: Toolbox
    server: Server
    remote: Server
    api_key: ApiKey


def _tenant(slug: str, secret: str) -> TenantObjects:
    tenant = Tenant.objects.create(slug=slug, name=f"{slug.title()} Inc")
    toolbox = Toolbox.objects.create(tenant=tenant, name=f"{slug}-tools", description="tools")
    server = Server(
        toolbox=toolbox, name=f"{slug}-time", command="mcp-server-time", env={"TOKEN": secret}
    )
    server.full_clean()
    server.save()
    remote = Server(
        toolbox=toolbox,
        name=f"{slug}-remote",
        transport="streamable-http",
        url="https://example.com/mcp",
        headers={"Authorization": f"Bearer {secret}"},
        position=1,
    )
    remote.full_clean()
    remote.save()
    api_key, _ = ApiKey.issue(tenant, label=f"{slug}-key")
    return TenantObjects(tenant, toolbox, server, remote, api_key)


@pytest.fixture
def acme(db: None) -> TenantObjects:
    return _tenant("acme", SECRET)


@pytest.fixture
def globex(db: None) -> TenantObjects:
    return _tenant("globex", OTHER_SECRET)


def _member(username: str, **roles: str) -> User:
    user = User.objects.create_user(username, password=f"pw-{username}-1234", is_staff=True)
    for slug, role in roles.items():
        Membership.objects.create(user=user, tenant=Tenant.objects.get(slug=slug), role=role)
    return user


@pytest.fixture
def people(acme: TenantObjects, globex: TenantObjects) -> dict[str, User]:
    operator = User.objects.create_user("olga", password="pw-olga-1234", is_staff=True)
    operator.groups.add(Group.objects.get_or_create(name=OPERATORS_GROUP)[0])
    return {
        "operator": operator,
        "acme_admin": _member("ada", acme="admin"),
        "acme_viewer": _member("vic", acme="viewer"),
        "globex_admin": _member("gus", globex="admin"),
        "mixed": _member("max", acme="admin", globex="viewer"),
    }


@pytest.fixture
def as_user(people: dict[str, User]) -> Callable[[str], Client]:
    """as_user("acme_admin") -> a test client logged in as that person."""

    def login(who: str) -> Client:
        client = Client()
        client.force_login(people[who])
        return client

    return login
