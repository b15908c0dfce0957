"""A stdio MCP server whose tools work but whose other lists do not: it declares resources
and prompts, and `resources/list` and `prompts/list` answer with JSON-RPC errors (its
templates list, empty, works). What the admin's check must say on the server's status.

    python tests/servers/unlisted_server.py

Tool: `echo` (`text`), answered `text`.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

RESOURCES_ERROR = "the resource index is gone"
PROMPTS_ERROR = "prompts are not ready"
ECHO = types.Tool(
    name="echo",
    description="Echo the text back",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
)


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ECHO])


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    text = str((params.arguments or {}).get("text", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def list_resources(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    raise MCPError(types.INTERNAL_ERROR, RESOURCES_ERROR)


async def list_resource_templates(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[])


async def list_prompts(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    raise MCPError(types.INTERNAL_ERROR, PROMPTS_ERROR)


async def main() -> None:
    server: Server[Any] = Server(
        "unlisted",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_list_prompts=list_prompts,
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
