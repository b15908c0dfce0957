"""Env and header values are encrypted in the database; keys can be rotated."""

import json
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection

from kernel import crypto
from toolboxes.models import Server, Tenant, Toolbox

OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()


@pytest.fixture
def toolbox(db):
    tenant = Tenant.objects.create(slug="acme")
    return Toolbox.objects.create(tenant=tenant, name="dev", description="d")


def raw_row(server: Server) -> tuple[dict, dict]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT env, headers FROM toolboxes_server WHERE id = %s", [server.pk])
        env, headers = cursor.fetchone()
    return tuple(
        value if isinstance(value, dict) else json.loads(value) for value in (env, headers)
    )


def test_values_are_ciphertext_names_are_readable(toolbox):
    stdio = Server.objects.create(
        toolbox=toolbox, name="s", command="x", env={"API_TOKEN": "plain-secret-value"}
    )
    remote = Server.objects.create(
        toolbox=toolbox,
        name="r",
        transport="sse",
        url="https://x.test/sse",
        headers={"Authorization": "Bearer header-secret"},
    )
    env, _ = raw_row(stdio)
    _, headers = raw_row(remote)
    assert list(env) == ["API_TOKEN"]
    assert env["API_TOKEN"] != "plain-secret-value"
    assert "plain-secret-value" not in json.dumps(env)
    assert "header-secret" not in json.dumps(headers)
    stdio.refresh_from_db()
    remote.refresh_from_db()
    assert stdio.env == {"API_TOKEN": "plain-secret-value"}
    assert remote.headers == {"Authorization": "Bearer header-secret"}


def test_references_are_stored_as_written_and_encrypted(toolbox):
    server = Server.objects.create(toolbox=toolbox, name="s", command="x", env={"T": "${TOKEN}"})
    server.refresh_from_db()
    assert server.env == {"T": "${TOKEN}"}
    assert "${TOKEN}" not in json.dumps(raw_row(server)[0])


def test_rotation(toolbox, settings):
    settings.ENCRYPTION_KEYS = [OLD_KEY]
    server = Server.objects.create(toolbox=toolbox, name="s", command="x", env={"A": "secret"})
    settings.ENCRYPTION_KEYS = [NEW_KEY, OLD_KEY]
    server.refresh_from_db()
    assert server.env == {"A": "secret"}  # old ciphertext still reads
    out = StringIO()
    call_command("rotate_encryption_keys", stdout=out)
    assert out.getvalue() == "Re-encrypted the secrets of 1 server(s).\n"
    settings.ENCRYPTION_KEYS = [NEW_KEY]
    server.refresh_from_db()
    assert server.env == {"A": "secret"}


def test_a_secret_no_key_can_read_is_a_clear_error(toolbox, settings):
    settings.ENCRYPTION_KEYS = [OLD_KEY]
    server = Server.objects.create(toolbox=toolbox, name="s", command="x", env={"A": "secret"})
    settings.ENCRYPTION_KEYS = [NEW_KEY]
    with pytest.raises(crypto.SecretDecryptionError, match="cannot be decrypted"):
        server.refresh_from_db()
