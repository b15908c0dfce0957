"""A stdio MCP server whose tools are named and described by its arguments, for the
search tests (a description in any language, one tool name in two tenants).

    python tests/servers/described_server.py NAME=DESCRIPTION [NAME=DESCRIPTION ...]

Each tool takes any arguments and answers `NAME: <its arguments as JSON>`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

OBJECT: dict[str, Any] = {"type": "object"}


def build(described: list[str]) -> Server:
    tools = []
    for item in described:
        name, _, description = item.partition("=")
        tools.append(types.Tool(name=name, description=description, input_schema=OBJECT))

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        answer = f"{params.name}: {json.dumps(params.arguments or {}, sort_keys=True)}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=answer)])

    return Server("described", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    server = build(sys.argv[1:])
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
