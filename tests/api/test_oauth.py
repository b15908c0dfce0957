"""OAuth sign-ins for the management API: a member signs a client in with scope `api` and
resource `/api/v1` (viewers too: the API acts with the member's role in the tenant chosen);
its access token works at /api/v1 and never at /mcp (the gateway's question about it answers
`api_scope`), an MCP sign-in's token is refused at /api/v1, and a request may not mix the two."""

from __future__ import annotations

from django.contrib.admin.models import LogEntry
from django.test import Client
from mcp.shared.auth import ProtectedResourceMetadata

from accounts.models import GrantScope, Membership, OAuthGrant
from accounts.oauth_callers import token_caller, token_checksum
from accounts.oauth_consent import ONE_KIND
from api.auth import REFUSALS
from mcp_gateway.front.auth import TOKEN_REFUSALS
from tests.accounts.oauth_client import BASE, SignIn
from tests.api.conftest import Api, problem

API_RESOURCE = BASE + "/api/v1"


def api_sign_in(as_user, who: str) -> SignIn:
    flow = SignIn(as_user(who))
    assert flow.register().status_code == 201
    return flow


def api_tokens(flow: SignIn, tenant: int) -> dict:
    code = flow.code(tenant, resource=API_RESOURCE, scope="api")
    response = flow.exchange(code, resource=API_RESOURCE)
    assert response.status_code == 200, response.content
    return response.json()


def test_the_apis_resource_metadata(db):
    response = Client().get("/.well-known/oauth-protected-resource/api/v1")
    metadata = ProtectedResourceMetadata.model_validate_json(response.content)
    assert str(metadata.resource) == API_RESOURCE and metadata.scopes_supported == ["api"]
    assert [str(url) for url in metadata.authorization_servers] == [BASE]


def test_a_viewer_signs_in_for_the_api_and_acts_as_a_viewer(as_user, acme, people):
    flow = api_sign_in(as_user, "acme_viewer")
    page = flow.client.get(flow.authorize_url(resource=API_RESOURCE, scope="api"))
    assert "<h2>Toolboxes</h2>" not in page.content.decode()  # the API chooses no toolboxes
    assert "management API" in page.content.decode()
    issued = api_tokens(flow, acme.tenant.pk)
    assert issued["scope"] == "api"
    grant = OAuthGrant.objects.get()
    assert (grant.scope, grant.tenant, grant.user) == (
        GrantScope.API,
        acme.tenant,
        people["acme_viewer"],
    )
    client = Api(issued["access_token"])
    me = client("GET", "/me").json()
    assert me["roles"] == {"acme": "viewer"} and me["token"] is None
    assert me["credential"] == f"OAuth sign-in #{grant.pk}"
    assert client("GET", "/tenants/acme/toolboxes").status_code == 200
    problem(
        client("POST", "/tenants/acme/toolboxes", {"name": "x", "description": "x"}),
        403,
        "Your role in tenant 'acme' is viewer: only its admins may change it.",
    )
    # Never at /mcp: the gateway's one question about the token says why.
    answer = token_caller(token_checksum(issued["access_token"]))
    assert answer is not None and answer.refusal == "api_scope"
    assert TOKEN_REFUSALS["api_scope"] == (
        "The access token is for the management API (scope api): /mcp takes an API key or an "
        "access token of scope mcp."
    )


def test_an_admins_api_sign_in_writes_as_them_in_the_chosen_tenant_only(as_user, acme, people):
    flow = api_sign_in(as_user, "mixed")
    issued = api_tokens(flow, acme.tenant.pk)
    client = Api(issued["access_token"])
    assert [t["slug"] for t in client("GET", "/tenants").json()] == ["acme"]
    problem(client("GET", "/tenants/globex"), 404, "No tenant 'globex'.")
    created = client("POST", "/tenants/acme/toolboxes", {"name": "ops", "description": "Ops"})
    assert created.status_code == 201
    entry = LogEntry.objects.get()
    grant = OAuthGrant.objects.get()
    assert entry.user == people["mixed"]
    assert entry.change_message == f"Added (OAuth sign-in #{grant.pk})."
    Membership.objects.filter(user=people["mixed"], tenant=acme.tenant).delete()
    problem(client("GET", "/me"), 401, REFUSALS["not_a_member"])
    assert REFUSALS["not_a_member"] == (
        "The signed-in user is no longer a member of the access token's tenant."
    )
    grant.revoke()  # its tokens are deleted with it
    problem(client("GET", "/me"), 401, "The access token is not valid.")


def test_an_mcp_sign_in_is_refused_at_the_api(as_user, acme):
    flow = api_sign_in(as_user, "acme_admin")
    issued = flow.tokens(acme.tenant.pk)
    assert issued["scope"] == "mcp"
    problem(Api(issued["access_token"])("GET", "/me"), 401, REFUSALS["mcp_credential"])
    problem(Api("wbo_" + "x" * 43)("GET", "/me"), 401, "The access token is not valid.")


def test_one_kind_of_scope_and_the_matching_resource(as_user, acme):
    flow = api_sign_in(as_user, "acme_admin")
    both = flow.client.get(flow.authorize_url(resource=API_RESOURCE, scope="mcp api"))
    assert both.status_code == 400  # a self-registered client hears errors on a page here
    assert ONE_KIND in both.content.decode()
    assert ONE_KIND == "Ask for scope mcp or scope api, not both."
    wrong = flow.client.get(flow.authorize_url(scope="api"))  # the /mcp resource
    assert f"use &#x27;{API_RESOURCE}&#x27;" in wrong.content.decode()


def test_an_api_sign_ins_token_expired(as_user, acme):
    from oauth2_provider.models import AccessToken

    issued = api_tokens(api_sign_in(as_user, "acme_admin"), acme.tenant.pk)
    AccessToken.objects.update(expires="2000-01-01T00:00:00Z")
    problem(Api(issued["access_token"])("GET", "/me"), 401, "The access token has expired.")
