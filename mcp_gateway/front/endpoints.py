"""Where the gateway answers: `/mcp`, and the same per tenant at `/mcp/t/<tenant-slug>`,
so that a load balancer can hash tenants onto replicas by path (the contract's rule: there
the credential must belong to that tenant, and another tenant's slug answers exactly as an
unknown one does)."""

from __future__ import annotations

from urllib.parse import quote

MCP_PATH = "/mcp"
TENANT_PREFIX = "/mcp/t/"
TOOLBOXES = "/toolboxes/"  # /mcp/t/<slug>/toolboxes/<toolbox>: one toolbox as a server
NOT_FOUND = "not_found"
NOT_FOUND_MESSAGE = "There is no MCP endpoint at this path for this credential."


def tenant_endpoint(mcp_url: str, slug: str) -> str:
    """A tenant's own endpoint, given the gateway's (`https://mcp.example.com/mcp`): what a
    key's page and snippets hand out, so that a load balancer can place the tenant."""
    return f"{mcp_url.rstrip('/')}/t/{slug}"


def toolbox_endpoint(mcp_url: str, slug: str, toolbox: str) -> str:
    """One toolbox's endpoint as an MCP server of its own (`front.toolbox_server`): under
    its tenant's, so that a load balancer places it with the tenant."""
    return f"{tenant_endpoint(mcp_url, slug)}{TOOLBOXES}{quote(toolbox, safe='')}"


def is_gateway_path(path: str) -> bool:
    return path in (MCP_PATH, MCP_PATH + "/") or path.startswith(TENANT_PREFIX)


def tenant_of(path: str) -> str | None:
    """The slug a per-tenant path names ('' for a path that names none well), or None for
    `/mcp` itself."""
    if not path.startswith(TENANT_PREFIX):
        return None
    slug = path[len(TENANT_PREFIX) :]
    slug = slug[:-1] if slug.endswith("/") else slug
    return slug if slug and "/" not in slug else ""
