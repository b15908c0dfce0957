"""Fixtures shared by the whole suite: small factories for the configuration models."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from toolboxes.models import Server, Tenant, Toolbox


@pytest.fixture
def make_tenant(db: None) -> Callable[..., Tenant]:
    def make(slug: str = "acme", **fields: Any) -> Tenant:
        return Tenant.objects.create(slug=slug, **fields)

    return make


@pytest.fixture
def make_toolbox(db: None) -> Callable[..., Toolbox]:
    def make(tenant: Tenant, name: str = "dev", **fields: Any) -> Toolbox:
        fields.setdefault("description", f"{name} tools")
        return Toolbox.objects.create(tenant=tenant, name=name, **fields)

    return make


@pytest.fixture
def make_server(db: None) -> Callable[..., Server]:
    def make(toolbox: Toolbox, name: str = "time", **fields: Any) -> Server:
        fields.setdefault("command", "mcp-server-time")
        server = Server(toolbox=toolbox, name=name, **fields)
        server.full_clean()
        server.save()
        return server

    return make


@pytest.fixture(scope="session", autouse=True)
def _drop_leftover_sessions(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """On PostgreSQL, end every other session on the test database before it is dropped:
    a gateway's worker thread (the call log's writer, a status recorder) may still hold
    one, and Django then cannot drop the database ("being accessed by other users")."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
