"""The API itself: `/api/v1/`, its OpenAPI 3.1 document (`/api/v1/openapi.json`) and
interactive docs (`/api/v1/docs`), every route behind a personal API token, every error
a problem (RFC 9457)."""

from __future__ import annotations

from ninja import NinjaAPI

from api import problems
from api.auth import TokenAuth
from api.routes import calls, config, keys, servers, tenants, toolboxes

api = NinjaAPI(
    title="Workbench management API",
    version="1",
    description="Everything the admin does, over HTTP: tenants, toolboxes, servers, tool "
    "filters, API keys, the call log, and a tenant's whole configuration as one document. "
    "Errors are RFC 9457 problem details.",
    auth=TokenAuth(),
    urls_namespace="api-v1",
)
problems.install(api)
for module in (tenants, toolboxes, servers, keys, calls, config):
    api.add_router("", module.router)
