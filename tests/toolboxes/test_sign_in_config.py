"""A remote server's sign-in (its `auth` mode, OAuth client and scopes): validation, the
JSON file, and personal API keys (`create_api_key --user`)."""

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection

from accounts.models import Membership
from toolboxes.config_file import dumps, export_tenant, import_tenant
from toolboxes.models import ApiKey, AuthMode, Server, Tenant, Toolbox


@pytest.fixture
def toolbox(db):
    tenant = Tenant.objects.create(slug="acme")
    return Toolbox.objects.create(tenant=tenant, name="dev", description="d")


def remote(toolbox: Toolbox, **fields) -> Server:
    return Server(
        toolbox=toolbox,
        name="github",
        transport="streamable-http",
        url="https://api.example.com/mcp",
        **fields,
    )


def errors_of(server: Server) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        server.full_clean()
    return caught.value.message_dict


def test_sign_in_rules(toolbox):
    assert errors_of(
        Server(toolbox=toolbox, name="s", command="x", auth=AuthMode.OAUTH_PERSON)
    ) == {"auth": ["Only remote servers sign in."]}
    assert errors_of(
        remote(toolbox, auth=AuthMode.OAUTH_PERSON, headers={"authorization": "Bearer x"})
    ) == {"headers": ["A server signed in with OAuth takes no Authorization header."]}
    assert errors_of(remote(toolbox, auth=AuthMode.OAUTH_PERSON, oauth_client={"id": "x"})) == {
        "oauth_client": ["Unknown name id: give client_id and client_secret."]
    }
    assert errors_of(remote(toolbox, auth=AuthMode.HEADERS, oauth_client={"client_id": "x"})) == {
        "oauth_client": ["Only servers signed in with OAuth have an OAuth client."]
    }
    assert errors_of(
        remote(toolbox, auth=AuthMode.OAUTH_SHARED, oauth_client={"client_secret": "s"})
    ) == {"oauth_client": ["A client secret needs its client_id."]}
    assert errors_of(remote(toolbox, auth=AuthMode.CLIENT_CREDENTIALS)) == {
        "oauth_client": ["Client credentials need a client_id and client_secret."]
    }
    assert errors_of(remote(toolbox, oauth_scopes="repo")) == {
        "oauth_scopes": ["Only servers signed in with OAuth have scopes."]
    }
    headers = remote(toolbox, headers={"X-Team": "blue"})
    headers.full_clean()
    assert headers.auth == AuthMode.HEADERS  # headers given are static headers


def test_the_json_file_keeps_the_sign_in_and_never_a_token(toolbox):
    server = remote(
        toolbox,
        auth=AuthMode.OAUTH_PERSON,
        oauth_client={"client_id": "wb", "client_secret": "s3cret"},
        oauth_scopes="repo read:org",
    )
    server.full_clean()
    server.save()
    Server.objects.create(
        toolbox=toolbox,
        name="plain",
        transport="sse",
        url="https://x.example/sse",
        headers={"X-A": "1"},
        auth="headers",
        position=1,
    )
    exported = export_tenant(toolbox.tenant)
    servers = exported["toolboxes"]["dev"]["mcpServers"]
    assert servers["github"]["auth"] == {
        "mode": "oauth_person",
        "clientId": "wb",
        "clientSecret": "s3cret",
        "scopes": "repo read:org",
    }
    assert "auth" not in servers["plain"]
    # The secret is encrypted at rest.
    with connection.cursor() as cursor:
        cursor.execute("SELECT oauth_client FROM toolboxes_server WHERE id = %s", [server.pk])
        assert "s3cret" not in str(cursor.fetchone()[0])
    other = Tenant.objects.create(slug="beta")
    import_tenant(other, json.loads(dumps(exported)))
    assert export_tenant(other) == exported
    imported = Server.objects.get(toolbox__tenant=other, name="plain")
    assert imported.auth == AuthMode.HEADERS


def test_an_unknown_mode_in_the_file_is_refused(toolbox):
    data = {
        "toolboxes": {
            "dev": {
                "description": "d",
                "mcpServers": {
                    "g": {
                        "type": "streamable-http",
                        "url": "https://x.example/mcp",
                        "auth": {"mode": "magic"},
                    }
                },
            }
        }
    }
    with pytest.raises(Exception, match="auth"):
        import_tenant(toolbox.tenant, data)


def test_create_api_key_for_a_member(toolbox):
    user = get_user_model().objects.create_user("alice")
    out = StringIO()
    with pytest.raises(CommandError, match=r"^'alice' is not a member of tenant 'acme'\.$"):
        call_command("create_api_key", "acme", "--user", "alice", stdout=out)
    Membership.objects.create(user=user, tenant=toolbox.tenant, role="admin")
    call_command("create_api_key", "acme", "--user", "alice", stdout=out)
    assert out.getvalue().startswith("Created personal key of 'alice' wb_")
    assert ApiKey.objects.get().owner == user


def test_a_personal_keys_owner_is_a_member(toolbox):
    stranger = get_user_model().objects.create_user("mallory")
    key = ApiKey(tenant=toolbox.tenant, owner=stranger)
    with pytest.raises(ValidationError) as caught:
        key.full_clean(exclude=["prefix", "key_hash"])
    assert caught.value.message_dict == {
        "owner": ["A personal key's owner must be a member of its tenant."]
    }


def test_a_catalog_entrys_sign_in_round_trips(db):
    from toolboxes.catalog.entries import entries_from_export, export_catalog, save_entry
    from toolboxes.models import CatalogEntry

    entry = CatalogEntry(
        name="github",
        transport="streamable-http",
        url="https://api.example.com/mcp",
        auth=AuthMode.OAUTH_PERSON,
        oauth_client={"client_id": "wb", "client_secret": "s3cret"},
        oauth_scopes="repo",
    )
    entry.full_clean()
    entry.save()
    exported = export_catalog()
    assert exported["catalog"]["github"]["auth"] == "oauth_person"
    CatalogEntry.objects.all().delete()
    for spec in entries_from_export(json.loads(json.dumps(exported))):
        save_entry(spec)
    assert export_catalog() == exported
    assert CatalogEntry.objects.get().oauth_client_values()["client_secret"] == "s3cret"
