"""A trivial tool served by the `mcp` SDK alone over Streamable HTTP: the HTTP hop's cost.

    .venv/bin/python bench/sdk_server.py --port 8124 [--json] [--answer FILE]

Configured like the gateway's own SDK server (low-level `Server`, stateless, SSE responses,
no OpenTelemetry middleware, uvicorn with the same loop and HTTP parser), so that
`latency.py` can subtract what the SDK and uvicorn cost from what Workbench adds.

The floors of issue 15's targets: with `--json` it answers with one JSON body, as the
gateway does when no progress is asked for (`profile.py`: the SDK's own CPU per trivial
call); with `--answer FILE` a tool `answer` returns that JSON as text and as
`structuredContent`, as `open_toolbox` does (`open.py`: what the SDK costs to send an
open's answer, whoever made it); with `--forward` each call goes on to mcp-server-time over
stdio through one SDK client session (unsandboxed, nothing checked, logged or counted):
the least any gateway built on the SDK does per forwarded call (`concurrency.py
--reference`: the floor under issue 23's tail).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp_types as types
import uvicorn
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server import Server, ServerRequestContext

Forward = Callable[[types.CallToolRequestParams], Awaitable[types.CallToolResult]]

TOOL = types.Tool(
    name="get_current_time",
    description="The current time in UTC",
    input_schema={"type": "object", "properties": {"timezone": {"type": "string"}}},
)


ANSWER = types.Tool(
    name="answer",
    description="The given answer",
    input_schema={"type": "object"},
)


def build_server(answer: str | None = None, forward: Forward | None = None) -> Server[Any]:
    tools = [TOOL] if answer is None else [TOOL, ANSWER]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == ANSWER.name and answer is not None:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=answer)],
                structured_content=json.loads(answer),
            )
        if forward is not None:
            return await forward(params)
        now = datetime.now(UTC).isoformat()
        return types.CallToolResult(content=[types.TextContent(type="text", text=now)])

    server: Server[Any] = Server("bench-sdk", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware = []  # as the gateway does: no OpenTelemetry spans
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--json", action="store_true", help="JSON answers instead of SSE")
    parser.add_argument("--answer", type=Path, help="a JSON file for the tool `answer`")
    parser.add_argument(
        "--forward", action="store_true", help="forward each call to mcp-server-time (stdio)"
    )
    options = parser.parse_args()
    downstream: list[ClientSession] = []

    async def forward(params: types.CallToolRequestParams) -> types.CallToolResult:
        return await downstream[0].call_tool(params.name, params.arguments)

    server = build_server(
        options.answer.read_text() if options.answer else None,
        forward if options.forward else None,
    )
    server.streamable_http_app(stateless_http=True, json_response=options.json)

    # Dispatch straight to the session manager, as the gateway does (no Starlette routing).
    async def application(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()
            async with AsyncExitStack() as stack, server.session_manager.run():
                if options.forward:
                    params = StdioServerParameters(
                        command=sys.executable, args=["-m", "mcp_server_time"]
                    )
                    read, write = await stack.enter_async_context(stdio_client(params))
                    session = await stack.enter_async_context(ClientSession(read, write))
                    await session.initialize()
                    downstream.append(session)
                await send({"type": "lifespan.startup.complete"})
                await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        await server.session_manager.handle_request(scope, receive, send)

    uvicorn.run(
        application,
        host="127.0.0.1",
        port=options.port,
        loop="uvloop",  # as every server of bench/ (common.UVICORN_OPTIONS)
        http="httptools",
        log_level="warning",
        access_log=False,
        lifespan="on",
    )


if __name__ == "__main__":
    main()
