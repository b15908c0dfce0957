"""A stdio MCP server that exercises what a gateway must relay besides a result (issue 34),
on the SDK's low-level Server.

    python tests/servers/relay_probe.py [--port N]

(with `--port`, served over Streamable HTTP, stateful: a remote server whose
`list_changed` comes on the client's standalone stream)

Tools:
- `decorated`: a definition with `icons`, `_meta` and `execution`;
- `refuse`: answers with a JSON-RPC error of code -32021 and `data`
  ({"capability": "elicitation", "mode": "form"});
- `echo_meta`: returns the request `_meta` it received (JSON text and structured);
- `log`: sends one `notifications/message` per level of `levels` (default debug, info,
  warning, error; data `"<level> message"`, logger `probe`), then answers `logged`;
- `add_tool`: adds the tool `added` (which answers `added here`) and announces it with
  `notifications/tools/list_changed`, then answers `added`;
- `flood`: sends `count` `notifications/message` (written straight to stdout, as fast as
  the pipe takes them), then answers `flooded <count>`;
- `wait`: sleeps `seconds` (default 30), then answers `waited`.
"""

from __future__ import annotations

import json
import os
import sys
from io import TextIOWrapper
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

OBJECT: dict[str, Any] = {"type": "object"}
LEVELS = ["debug", "info", "warning", "error"]
REFUSAL_CODE = -32021
REFUSAL_MESSAGE = "Client did not declare the form elicitation capability"
REFUSAL_DATA = {"capability": "elicitation", "mode": "form"}
ICON = {"src": "https://example.org/probe.png", "mimeType": "image/png", "sizes": ["48x48"]}
TOOL_META = {"ui/resourceUri": "ui://probe/panel", "probe/version": 3}

DECORATED = types.Tool.model_validate(
    {
        "name": "decorated",
        "description": "A tool with icons, _meta and execution",
        "inputSchema": OBJECT,
        "icons": [ICON],
        "_meta": TOOL_META,
        "execution": {"taskSupport": "optional"},
    }
)


def _tool(name: str, description: str) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=OBJECT)


TOOLS = [
    DECORATED,
    _tool("refuse", "Answer with a JSON-RPC error of code -32021 and data"),
    _tool("echo_meta", "Return the request _meta this server received"),
    _tool("log", "Send one log message per level of `levels`, then answer"),
    _tool("add_tool", "Add the tool `added` and announce it with tools/list_changed"),
    _tool("flood", "Send `count` log messages as fast as possible, then answer"),
    _tool("wait", "Sleep `seconds`, then answer"),
]
ADDED = _tool("added", "A tool added at run time")


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


def build(wire: BinaryIO | None) -> Server[Any]:
    added = False

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[*TOOLS, ADDED] if added else TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        nonlocal added
        arguments = params.arguments or {}
        if params.name == "decorated":
            return text("decorated")
        if params.name == "refuse":
            raise MCPError(REFUSAL_CODE, REFUSAL_MESSAGE, REFUSAL_DATA)
        if params.name == "echo_meta":
            meta = params.model_dump(by_alias=True, mode="json").get("_meta") or {}
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(meta, sort_keys=True))],
                structured_content=meta,
            )
        if params.name == "log":
            for level in arguments.get("levels", LEVELS):
                notification = types.LoggingMessageNotification(
                    params=types.LoggingMessageNotificationParams(
                        level=level, data=f"{level} message", logger="probe"
                    )
                )
                await ctx.session.send_notification(notification, ctx.request_id)
            return text("logged")
        if params.name == "add_tool":
            added = True
            await ctx.session.send_notification(types.ToolListChangedNotification())
            return text("added")
        if params.name == "added" and added:
            return text("added here")
        if params.name == "flood":
            count = int(arguments.get("count", 1000))
            line = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "logger": "flood", "data": "flood"},
                }
            )
            if wire is not None:
                await flood(wire, line, count)
            else:  # over HTTP: one SSE event each, on the call's stream
                note = types.LoggingMessageNotification(
                    params=types.LoggingMessageNotificationParams(
                        level="info", data="flood", logger="flood"
                    )
                )
                for _ in range(count):
                    await ctx.session.send_notification(note, ctx.request_id)
            return text(f"flooded {count}")
        if params.name == "wait":
            await anyio.sleep(float(arguments.get("seconds", 30)))
            return text("waited")
        raise MCPError(types.METHOD_NOT_FOUND, f"Unknown tool: {params.name}")

    return Server("relay-probe", on_list_tools=list_tools, on_call_tool=call_tool)


async def flood(out: BinaryIO, line: str, count: int) -> None:
    """`count` copies of `line` on the wire, in chunks, through the buffer the SDK's own
    writer uses (whole lines only; the SDK writes nothing else meanwhile)."""
    chunk = (line + "\n") * 1000
    left = count
    while left:
        n = min(left, 1000)
        data = chunk if n == 1000 else (line + "\n") * n
        await anyio.to_thread.run_sync(_write, out, data.encode())
        left -= n


def _write(out: Any, data: bytes) -> None:
    out.write(data)
    out.flush()


def serve_http(port: int) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    app = build(None).streamable_http_app(
        stateless_http=False,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


async def main() -> None:
    # The wire (fd 1) held here, so that `flood` can write to it beside the SDK's writer.
    wire = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed goes to stderr
    stdout = anyio.wrap_file(TextIOWrapper(wire, encoding="utf-8"))
    server = build(wire)
    async with stdio_server(stdout=stdout) as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if "--port" in sys.argv:
        serve_http(int(sys.argv[sys.argv.index("--port") + 1]))
    else:
        anyio.run(main)
