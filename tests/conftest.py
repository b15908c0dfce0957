"""Fixtures shared by the whole suite: small factories for the configuration models."""

from collections.abc import Callable
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
