"""Personal API tokens at /api/v1: every refusal (a 401 problem saying why), an MCP
credential refused by name, the owner's roles, narrowing to a tenant and to reading, and
`create_api_token`."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from accounts import api_tokens
from accounts.models import ApiToken
from api.auth import REFUSALS
from api.problems import MISSING_TOKEN
from kernel import credentials
from tests.api.conftest import Api, problem


def get(headers: dict[str, str]) -> object:
    return Client().get("/api/v1/tenants", headers=headers)


def test_no_token_is_a_401_problem(db):
    response = get({})
    problem(response, 401, MISSING_TOKEN)
    assert response["WWW-Authenticate"] == (
        'Bearer resource_metadata="http://testserver/.well-known/oauth-protected-resource/api/v1"'
    )
    assert MISSING_TOKEN == "An API token is required: send 'Authorization: Bearer <api token>'."


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "malformed_authorization"),
        ({"Authorization": "Bearer nonsense"}, "malformed_token"),
        ({"Authorization": "Bearer wbp_short_x"}, "malformed_token"),
        ({"X-API-Key": "wb_abcdefgh_" + "x" * 43}, "mcp_credential"),
    ],
)
def test_malformed_credentials(db, headers, reason):
    response = get(headers)
    problem(response, 401, REFUSALS[reason])
    assert response["WWW-Authenticate"] == (
        f'Bearer error="invalid_token", error_description="{REFUSALS[reason]}", '
        'resource_metadata="http://testserver/.well-known/oauth-protected-resource/api/v1"'
    )
    assert not any('"' in text for text in REFUSALS.values())  # nothing to escape


def test_an_mcp_api_key_is_refused_by_name(people, acme):
    from toolboxes.models import ApiKey

    _, key = ApiKey.issue(acme.tenant)
    problem(get({"Authorization": f"Bearer {key}"}), 401, REFUSALS["mcp_credential"])
    # An OAuth token: refused by name once found to be an MCP sign-in's (tests/api/test_oauth).
    problem(get({"Authorization": "Bearer wbo_" + "x" * 43}), 401, "The access token is not valid.")
    assert REFUSALS["mcp_credential"] == (
        "This is a credential for /mcp (an MCP API key or an MCP OAuth token); the "
        "management API takes a personal API token (wbp_...)."
    )


def test_wrong_revoked_expired_and_inactive(people, tokens):
    token = tokens["acme_admin"]
    forged = token[:-4] + ("aaaa" if not token.endswith("aaaa") else "bbbb")
    problem(get({"Authorization": f"Bearer {forged}"}), 401, "The API token is not valid.")
    record = ApiToken.objects.get(prefix=api_tokens.API_TOKEN.parse_prefix(token))
    record.expires_at = timezone.now() - timedelta(seconds=1)
    record.save()
    problem(get({"Authorization": f"Bearer {token}"}), 401, "The API token has expired.")
    record.revoke()
    problem(get({"Authorization": f"Bearer {token}"}), 401, "The API token has been revoked.")
    user_token = tokens["acme_viewer"]
    people["acme_viewer"].is_active = False
    people["acme_viewer"].save()
    problem(
        get({"Authorization": f"Bearer {user_token}"}), 401, "The API token's owner is not active."
    )


def test_stored_hashed_and_last_use_recorded(tokens):
    token = tokens["acme_admin"]
    record = ApiToken.objects.get(prefix=api_tokens.API_TOKEN.parse_prefix(token))
    assert token not in str(record.__dict__) and record.token_hash == credentials.hash_of(token)
    assert record.last_used_at is None
    assert Api(token)("GET", "/me").status_code == 200
    record.refresh_from_db()
    assert record.last_used_at is not None


def test_whoami_shows_the_owners_roles(api):
    me = api("mixed")("GET", "/me").json()
    assert me["username"] == "max" and me["operator"] is False
    assert me["roles"] == {"acme": "admin", "globex": "viewer"}
    assert api("operator")("GET", "/me").json()["operator"] is True


def test_a_token_narrowed_to_a_tenant_and_to_reading(people, acme, globex):
    _, token = ApiToken.issue(people["mixed"], name="ci", tenant=acme.tenant, read_only=True)
    client = Api(token)
    assert [t["slug"] for t in client("GET", "/tenants").json()["items"]] == ["acme"]
    problem(client("GET", "/tenants/globex"), 404, "No tenant 'globex'.")
    response = client("POST", "/tenants/acme/toolboxes", {"name": "ci", "description": "x"})
    problem(response, 403, "This API token is read-only.")


def test_an_operators_narrowed_token_may_not_make_tenants(people, acme):
    _, token = ApiToken.issue(people["operator"], name="ci", tenant=acme.tenant)
    response = Api(token)("POST", "/tenants", {"slug": "initech"})
    problem(response, 403, "This credential is limited to tenant 'acme'.")


def test_create_api_token_command(people, acme, capsys):
    call_command("create_api_token", "ada", "deploys", "--tenant", "acme", "--read-only")
    out = capsys.readouterr().out.strip().splitlines()
    token = out[-1]
    record = ApiToken.objects.get(prefix=api_tokens.API_TOKEN.parse_prefix(token))
    assert (record.user.username, record.tenant, record.read_only) == ("ada", acme.tenant, True)
    assert "Copy it now: it will not be shown again." in out[-2]
    assert Api(token)("GET", "/tenants/acme").status_code == 200
    with pytest.raises(CommandError, match=re.escape("No active user 'nobody'.")):
        call_command("create_api_token", "nobody", "x")
    with pytest.raises(CommandError, match=re.escape("No tenant with slug 'nope'.")):
        call_command("create_api_token", "ada", "x", "--tenant", "nope")
    with pytest.raises(
        CommandError, match=re.escape("--expires-in-days must be between 1 and 366.")
    ):
        call_command("create_api_token", "ada", "x", "--expires-in-days", "0")


def test_no_route_and_a_method_not_taken_are_problems(api):
    problem(api("acme_admin")("GET", "/nope"), 404, "There is no API operation at this path.")
    response = api("acme_admin")("DELETE", "/me")
    problem(response, 405, "This operation does not take DELETE; it takes GET.")
    assert response["Allow"] == "GET"
    response = api("acme_admin")("PUT", "/tenants")
    problem(response, 405, "This operation does not take PUT; it takes GET, POST.")


def test_a_body_that_is_not_json(tokens):
    response = Client().post(
        "/api/v1/tenants/acme/toolboxes",
        data="{not json",
        content_type="application/json",
        headers={"Authorization": f"Bearer {tokens['acme_admin']}"},
    )
    problem(response, 400, "The request body is not valid JSON.")
