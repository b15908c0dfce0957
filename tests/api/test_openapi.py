"""The served OpenAPI document: valid OpenAPI 3.1, every operation described; and a
property-based run of schemathesis against it, as a tenant admin and as a viewer: no 5xx,
every answer's status, content type and body as the document says, no planted secret in
any answer."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, Phase, settings
from openapi_spec_validator import validate
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.conftest import PLANTED

DOCUMENT = "/api/v1/openapi.json"
EXAMPLES = 5  # per operation and role: the whole run stays within ~15 s on one core
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Path parameters drawn from what exists half of the time, so that runs reach past 404s.
EXISTING = {"slug": "acme", "name": "acme-tools", "server": "acme-time"}

schema = schemathesis.openapi.from_wsgi(DOCUMENT, get_wsgi_application())


def test_the_document_is_valid_openapi_3_1(db):
    document = Client().get(DOCUMENT).json()
    validate(document)
    assert document["openapi"].startswith("3.1")
    [scheme] = document["components"]["securitySchemes"].values()
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    operations = {
        f"{method.upper()} {path.removeprefix('/api/v1')}"
        for path, methods in document["paths"].items()
        for method in methods
    }
    assert {"GET /tenants/{slug}/config", "PUT /tenants/{slug}/config", "GET /me"} <= operations
    for methods in document["paths"].values():
        for operation in methods.values():
            assert operation["responses"]["401"]["content"].keys() == {"application/problem+json"}


def test_the_docs_page_is_served(db):
    page = Client().get("/api/v1/docs")
    assert page.status_code == 200 and DOCUMENT.encode() in page.content


@pytest.fixture
def keep_test_connection() -> Iterator[None]:
    """Through the WSGI app, as through Django's test client: a request's start and end must
    not close the test's database connection (its transaction holds the test's world)."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.mark.once_pg
@pytest.mark.parametrize("who", ["acme_admin", "acme_viewer"])
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_the_api_keeps_its_document(case, who, tokens, keep_test_connection):
    for name, value in EXISTING.items():
        if name in (case.path_parameters or {}) and len(str(case.path_parameters[name])) % 2:
            case.path_parameters[name] = value
    response = case.call(headers={"Authorization": f"Bearer {tokens[who]}"})
    case.validate_response(response, checks=CHECKS)
    for secret in PLANTED:
        assert secret not in response.text


def test_the_readmes_recipes_name_operations_of_the_document(db):
    section = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    templates = [
        re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path.removeprefix("/api/v1")) + "$")
        for path in Client().get(DOCUMENT).json()["paths"]
    ]
    used = {
        re.sub(r"\$\w+|<\w+>", "x", path) for path in re.findall(r'\$API(/[^\s"?\\]*)', section)
    }
    assert len(used) >= 6
    for path in used:
        assert any(template.match(path) for template in templates), path
