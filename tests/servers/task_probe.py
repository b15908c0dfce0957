"""A stdio MCP server that shows what a gateway passes on of tasks (2025-11-25's
task-augmented calls, issue 34), on the SDK's low-level Server:

- `echo_task`: declares `execution.taskSupport` `optional` and answers, at once and as a
  plain result, with the `task` field its call carried (`{"task": null}` for none).

    python tests/servers/task_probe.py
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

ECHO_TASK = types.Tool.model_validate(
    {
        "name": "echo_task",
        "description": "Answer with the task field this call carried",
        "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "optional"},
    }
)


def build() -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[ECHO_TASK])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name != "echo_task":
            raise MCPError(types.METHOD_NOT_FOUND, f"Unknown tool: {params.name}")
        task = params.task.model_dump(by_alias=True, mode="json") if params.task else None
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps({"task": task}))],
            structured_content={"task": task},
        )

    return Server("task-probe", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
