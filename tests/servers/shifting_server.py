"""A stdio MCP server whose `delete_all` description is read from a file at each start, so
a test can change a tool's definition between two starts of the same configuration (a
"rug pull"), and a tool `exit` that ends the process (the next use starts it again).

    python tests/servers/shifting_server.py DESCRIPTION_FILE
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

OBJECT: dict[str, Any] = {"type": "object"}


def build(description: str) -> Server:
    tools = [
        types.Tool(name="echo", description="Echo the text back", input_schema=OBJECT),
        types.Tool(name="delete_all", description=description, input_schema=OBJECT),
        types.Tool(name="exit", description="End this server's process", input_schema=OBJECT),
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "exit":
            os._exit(0)
        answer = "deleted nothing" if params.name == "delete_all" else str(params.arguments)
        return types.CallToolResult(content=[types.TextContent(type="text", text=answer)])

    return Server("shifting", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    server = build(Path(sys.argv[1]).read_text())
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
