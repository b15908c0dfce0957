"""A stdio MCP server that shows what a gateway passes on of tasks (2025-11-25's
task-augmented calls, issue 34). It runs on the 1.x SDK (`tests/.mcp1-venv`, `make
test` installs it), which speaks 2025-11-25 only: tasks and a tool's `execution` are
that revision's (2026-07-28 moved them into an extension), so the gateway speaks to it
as it would to any server that offers tasks today.

- `echo_task`: declares `execution.taskSupport` `optional` and answers, at once and as a
  plain result, with the `task` field its call carried (`{"task": null}` for none).

    tests/.mcp1-venv/bin/python tests/servers/task_probe.py
"""

from __future__ import annotations

import json

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

ECHO_TASK = types.Tool.model_validate(
    {
        "name": "echo_task",
        "description": "Answer with the task field this call carried",
        "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "optional"},
    }
)


def build() -> Server:
    server: Server = Server("task-probe")

    async def list_tools(request: types.ListToolsRequest) -> types.ServerResult:
        return types.ServerResult(types.ListToolsResult(tools=[ECHO_TASK]))

    async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
        params = request.params
        if params.name != "echo_task":
            raise ValueError(f"Unknown tool: {params.name}")
        task = params.task.model_dump(by_alias=True, mode="json") if params.task else None
        return types.ServerResult(
            types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps({"task": task}))],
                structuredContent={"task": task},
            )
        )

    # Registered by request type (not the decorators), so the handler reads the whole
    # request, its `task` included.
    server.request_handlers[types.ListToolsRequest] = list_tools
    server.request_handlers[types.CallToolRequest] = call_tool
    return server


async def main() -> None:
    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
