"""The API itself: `/api/v1/`, its OpenAPI 3.1 document (`/api/v1/openapi.json`) and
interactive docs (`/api/v1/docs`), every route behind a personal API token, every error
a problem (RFC 9457)."""

from __future__ import annotations

from typing import Any

from ninja import NinjaAPI

from api import problems
from api.auth import TokenAuth
from api.routes import (
    calls,
    catalog,
    checks,
    config,
    connected,
    keys,
    members,
    pins,
    policies,
    servers,
    tenants,
    tool_search,
    toolboxes,
)
from api.throttle import TokenRateThrottle


class ManagementApi(NinjaAPI):
    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> Any:
        """The document, its errors described as what they are: problem details."""
        document = super().get_openapi_schema(*args, **kwargs)
        for operations in document["paths"].values():
            for operation in operations.values():
                for status, answer in operation.get("responses", {}).items():
                    content = answer.get("content", {})
                    if str(status).startswith(("4", "5")) and "application/json" in content:
                        content[problems.CONTENT_TYPE] = content.pop("application/json")
        return document


api = ManagementApi(
    title="Workbench management API",
    version="1",
    description="Everything the admin does, over HTTP: tenants, toolboxes, servers, tool "
    "filters, API keys, the call log, and a tenant's whole configuration as one document. "
    "Errors are RFC 9457 problem details.",
    auth=TokenAuth(),
    throttle=TokenRateThrottle(),
    urls_namespace="api-v1",
)
problems.install(api)
for module in (
    tenants,
    toolboxes,
    servers,
    checks,
    pins,
    keys,
    members,
    policies,
    catalog,
    calls,
    config,
    connected,
    tool_search,
):
    api.add_router("", module.router)
