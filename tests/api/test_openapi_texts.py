"""Every operation of the management API has a summary and a description of its own
(django-ninja generates a summary from the view's name, "List Pins", when none is written,
and leaves the description empty)."""

from __future__ import annotations

from django.test import Client

DOCUMENT = "/api/v1/openapi.json"
SUMMARIES = {
    "GET /me": "Who am I",
    "GET /tenants": "List tenants",
    "POST /tenants": "Create a tenant",
    "GET /tenants/{slug}": "Get a tenant",
    "PATCH /tenants/{slug}": "Change a tenant",
    "GET /tenants/{slug}/toolboxes": "List a tenant's toolboxes",
    "POST /tenants/{slug}/toolboxes": "Create a toolbox",
    "GET /tenants/{slug}/toolboxes/{name}": "Get a toolbox",
    "PATCH /tenants/{slug}/toolboxes/{name}": "Change a toolbox",
    "DELETE /tenants/{slug}/toolboxes/{name}": "Delete a toolbox",
    "GET /tenants/{slug}/toolboxes/{name}/servers": "List a toolbox's servers",
    "POST /tenants/{slug}/toolboxes/{name}/servers": "Add a server",
    "GET /tenants/{slug}/toolboxes/{name}/servers/{server}": "Get a server",
    "PATCH /tenants/{slug}/toolboxes/{name}/servers/{server}": "Change a server",
    "DELETE /tenants/{slug}/toolboxes/{name}/servers/{server}": "Delete a server",
    "PUT /tenants/{slug}/toolboxes/{name}/servers/{server}/tool-filters": (
        "Set a server's tool filters"
    ),
    "POST /tenants/{slug}/toolboxes/{name}/servers/{server}/check": "Check a server",
    "GET /tenants/{slug}/tool-definitions": "List tool definitions",
    "GET /tenants/{slug}/tools/search": "Search a tenant's tools",
    "POST /tenants/{slug}/toolboxes/{name}/servers/{server}/tools/{tool}/approve": (
        "Approve a tool definition"
    ),
    "POST /tenants/{slug}/toolboxes/{name}/servers/{server}/tools/{tool}/reject": (
        "Reject a tool definition"
    ),
    "GET /tenants/{slug}/keys": "List API keys",
    "POST /tenants/{slug}/keys": "Create an API key",
    "GET /tenants/{slug}/keys/{prefix}": "Get an API key",
    "PATCH /tenants/{slug}/keys/{prefix}": "Change an API key",
    "POST /tenants/{slug}/keys/{prefix}/revoke": "Revoke an API key",
    "GET /tenants/{slug}/policies": "List tool policies",
    "POST /tenants/{slug}/policies": "Create a tool policy",
    "GET /tenants/{slug}/policies/{rule_id}": "Get a tool policy",
    "PATCH /tenants/{slug}/policies/{rule_id}": "Change a tool policy",
    "DELETE /tenants/{slug}/policies/{rule_id}": "Delete a tool policy",
    "GET /tenants/{slug}/policy-defaults": "Get the tool policy defaults",
    "PUT /tenants/{slug}/policy-defaults": "Set the tool policy defaults",
    "GET /tenants/{slug}/members": "List members",
    "POST /tenants/{slug}/members": "Add a member",
    "PATCH /tenants/{slug}/members/{username}": "Change a member's role",
    "DELETE /tenants/{slug}/members/{username}": "Remove a member",
    "GET /catalog": "List catalog entries",
    "POST /catalog": "Add or update catalog entries",
    "GET /catalog/{name}": "Get a catalog entry",
    "DELETE /catalog/{name}": "Delete a catalog entry",
    "GET /tenants/{slug}/calls": "List calls",
    "GET /tenants/{slug}/usage": "Get usage",
    "GET /tenants/{slug}/config": "Get the configuration",
    "PUT /tenants/{slug}/config": "Apply a configuration",
    "GET /me/connected-accounts": "List my connected accounts",
    "POST /me/connected-accounts/{server_id}/link": "Get a connect link",
    "DELETE /me/connected-accounts/{server_id}": "Disconnect an account",
}


def operations() -> dict[str, dict]:
    document = Client().get(DOCUMENT).json()
    return {
        f"{method.upper()} {path.removeprefix('/api/v1')}": operation
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    }


def generated_summary(operation: dict) -> str:
    """What ninja writes when a view has none: its function's name, title-cased (the
    operation id is `api_routes_<module>_<function>`)."""
    function = operation["operationId"].split("_", 3)[3]
    return function.title().replace("_", " ")


def test_every_operation_has_a_written_summary(db):
    found = operations()
    assert {name: operation["summary"] for name, operation in found.items()} == SUMMARIES
    generated = [name for name, op in found.items() if op["summary"] == generated_summary(op)]
    assert generated == []


def test_every_operation_has_a_description(db):
    found = operations()
    undescribed = [
        name
        for name, operation in found.items()
        if not operation.get("description", "").strip()
        or operation["description"] == operation["summary"]
    ]
    assert undescribed == []
    assert found["PUT /tenants/{slug}/toolboxes/{name}/servers/{server}/tool-filters"][
        "description"
    ] == (
        'Which of its tools the toolbox exposes: ["*"] all, a list of names, [] none. A tool '
        "filtered out is not listed by `open_toolbox`, and `use_tool` answers TOOL_NOT_FOUND for "
        "it (the call log records it as `filtered`)."
    )
