"""A trivial tool served by the `mcp` SDK alone over Streamable HTTP: the HTTP hop's cost.

    .venv/bin/python bench/sdk_server.py --port 8124

Configured like the gateway's own SDK server (low-level `Server`, stateless, SSE responses,
no OpenTelemetry middleware, uvicorn with the same loop and HTTP parser), so that
`latency.py` can subtract what the SDK and uvicorn cost from what Workbench adds.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server import Server, ServerRequestContext

TOOL = types.Tool(
    name="get_current_time",
    description="The current time in UTC",
    input_schema={"type": "object", "properties": {"timezone": {"type": "string"}}},
)


def build_server() -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[TOOL])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        now = datetime.now(UTC).isoformat()
        return types.CallToolResult(content=[types.TextContent(type="text", text=now)])

    server: Server[Any] = Server("bench-sdk", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware = []  # as the gateway does: no OpenTelemetry spans
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    options = parser.parse_args()
    server = build_server()
    server.streamable_http_app(stateless_http=True)

    # Dispatch straight to the session manager, as the gateway does (no Starlette routing).
    async def application(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()
            async with server.session_manager.run():
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
