"""What a connection reads before it serves: the operator's settings for `${VAR}`
references and tool discovery (read at each connect, so that a change of settings applies to
the next connection), a server's redactor, and its whole tool list within bounds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import mcp_types as types
from django.conf import settings
from mcp.client.session import ClientSession

from kernel.classified import ClassifiedFailure
from kernel.redaction import Redactor, secret_values
from mcp_gateway.downstream.envrefs import ReferencePolicy, referenced_values
from mcp_gateway.options import GatewayOptions
from mcp_gateway.snapshots.servers import ServerConfig


class DiscoveryLimit(ClassifiedFailure):
    """A server's tool list is past one of the gateway's bounds."""


@dataclass(frozen=True, slots=True)
class DiscoveryBounds:
    max_tools: int
    max_pages: int
    max_bytes: int


def connect_settings(options: GatewayOptions) -> tuple[ReferencePolicy, DiscoveryBounds]:
    """What the operator set for references and discovery, from the options read at each
    connect (`current_options`), so that a change of settings (or a test's) applies to the
    next connection."""
    own = {name for name in dir(settings) if name.isupper()}
    policy = ReferencePolicy(options.env_references, own | set(options.env_file_names))
    bounds = DiscoveryBounds(
        options.max_tools_per_server, options.max_tool_pages, options.max_tool_bytes
    )
    return policy, bounds


def redactor_for(server: ServerConfig, environ: Mapping[str, str]) -> Redactor:
    """Everything secret about one server: its env and header values, raw and expanded,
    its secret catalog parameters (in args or URL too) and its OAuth client's secret. The
    one redactor of its log lines, stderr, incidents and call log payloads."""
    env_values = [value for _, value in server.env]
    header_values = [value for _, value in server.headers]
    strings = [server.command, *server.args, server.url or "", *env_values, *header_values]
    expanded = referenced_values(strings, environ)
    client_secret = [server.oauth_client_secret] if server.oauth_client_secret else []
    secret = [*env_values, *expanded, *server.secrets, *client_secret]
    return Redactor(secret_values(secret, header_values))


async def list_all_tools(session: ClientSession, bounds: DiscoveryBounds) -> list[types.Tool]:
    """Every page of tools/list, within the gateway's bounds on tools, pages and the
    bytes of their definitions (a server must not fill the gateway's memory)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    pages = size = 0
    while True:
        if pages >= bounds.max_pages:
            raise DiscoveryLimit(
                f"the server lists its tools in more than {bounds.max_pages} pages "
                "(the gateway's limit)"
            )
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        pages += 1
        tools.extend(page.tools)
        if len(tools) > bounds.max_tools:
            raise DiscoveryLimit(
                f"the server offers more than {bounds.max_tools} tools (the gateway's limit)"
            )
        size += sum(len(tool.model_dump_json(exclude_none=True)) for tool in page.tools)
        if size > bounds.max_bytes:
            raise DiscoveryLimit(
                f"the server's tool definitions exceed {bounds.max_bytes} bytes "
                "(the gateway's limit)"
            )
        cursor = page.next_cursor
        if not cursor:
            return tools
