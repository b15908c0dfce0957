"""What only PostgreSQL (the production database) can show; skipped on SQLite."""

import json

import pytest
from django.db import connection

from tests.harness.markers import requires_postgresql
from toolboxes.models import Server, Tenant, Toolbox

pytestmark = [requires_postgresql, pytest.mark.django_db]


def test_json_columns_are_jsonb_and_hold_ciphertext():
    tenant = Tenant.objects.create(slug="acme")
    toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="d")
    server = Server.objects.create(toolbox=toolbox, name="s", command="x", env={"K": "v-secret"})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT data_type FROM information_schema.columns "
            "WHERE table_name = 'toolboxes_server' AND column_name IN ('env', 'headers', 'args')"
        )
        assert {row[0] for row in cursor.fetchall()} == {"jsonb"}
        cursor.execute("SELECT env->>'K' FROM toolboxes_server WHERE id = %s", [server.pk])
        stored = cursor.fetchone()[0]
    assert stored.startswith("gAAAA")  # a Fernet token
    assert "v-secret" not in json.dumps(stored)


def test_check_constraints_are_in_the_catalog():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'toolboxes_server'::regclass"
        )
        names = {row[0] for row in cursor.fetchall()}
    assert {
        "server_name_charset",
        "server_transport_valid",
        "server_stdio_needs_command",
        "server_remote_needs_url",
        "server_timeout_positive",
        "server_name_unique_per_toolbox",
    } <= names
