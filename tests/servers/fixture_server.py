"""A small stdio MCP server for precise test cases (built on the SDK's low-level Server).

    python -m tests.servers.fixture_server [--tools N] [--page-size N] [--prefix P]
        [--hang-initialize] [--exit-at-start] [--crash-on-call]

Tools: `echo` (text back), `add` (structured result), `image` (one PNG pixel), `mixed`
(audio, embedded resources, a resource link), `fail`
(downstream isError), `slow` (sleeps `seconds`), `env` (its environment as JSON), `crash`
(exits the process), `progress` (reports progress, then answers), `headers` (the HTTP
headers it was sent, when served remotely by `http_fixture`), `explode` (a JSON-RPC
error), `shout` (prints to stderr), `raise_code` (a JSON-RPC error of the given `code`
and `message`), `leak` (prints the values of the env variables `names` to stderr), and
`--tools N` more named `tool_000`, ... listed `--page-size` at a time, with descriptions
of `--description-size` bytes. `--leak-env NAME` prints NAME's value to stderr at start
(before `--exit-at-start`); `--print-args` prints its own arguments there, as many servers'
start-up banners do.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import subprocess
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

PIXEL_PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()

OBJECT: dict[str, Any] = {"type": "object"}


def base_tools(prefix: str) -> list[types.Tool]:
    def tool(
        name: str, description: str, schema: dict[str, Any] = OBJECT, **extra: Any
    ) -> types.Tool:
        return types.Tool(name=name, description=description, input_schema=schema, **extra)

    return [
        tool(
            "echo",
            f"{prefix}Echo the text back",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        ),
        tool(
            "add",
            "Add two numbers (structured result)",
            {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
            output_schema={"type": "object", "properties": {"sum": {"type": "number"}}},
            title="Adder",
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        tool("image", "Return a one-pixel PNG"),
        tool("mixed", "Return audio, an embedded resource and a resource link"),
        tool("fail", "Always fails with isError"),
        tool("slow", "Sleep for `seconds`, then answer"),
        tool("env", "Return this process's environment"),
        tool("crash", "Exit the server process"),
        tool("progress", "Report progress three times, then answer"),
        tool("headers", "Return the HTTP request headers this server saw (remote only)"),
        tool("explode", "Raise an exception: a JSON-RPC error, not a tool result"),
        tool("shout", "Print `lines` lines of `size` bytes to stderr, then answer"),
        tool("big", "Return `size` bytes of text"),
        tool("garbage", "Print a non-JSON line on stdout, then answer"),
        tool("wait_cancel", "Create `marker`.started, sleep; when cancelled, create `marker`"),
        tool("raise_code", "Answer with a JSON-RPC error of `code` and `message`"),
        tool("leak", "Print the values of the environment variables `names` to stderr"),
    ]


def build(args: argparse.Namespace) -> Server[Any]:
    tools = base_tools(args.prefix) + [
        types.Tool(
            name=f"tool_{i:03d}",
            description=f"Generated tool {i}".ljust(args.description_size, "."),
            input_schema=OBJECT,
        )
        for i in range(args.tools)
    ]

    destructive = types.ToolAnnotations(destructive_hint=True, read_only_hint=False)
    tools = [
        tool.model_copy(update={"annotations": destructive})
        if tool.name in getattr(args, "destructive", ())  # http_fixture has no such flag
        else tool
        for tool in tools
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        start = int(params.cursor) if params and params.cursor else 0
        end = start + args.page_size
        next_cursor = str(end) if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=next_cursor)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        name = params.name
        if args.crash_on_call or name == "crash":
            os._exit(3)
        if name == "echo":
            return text(f"{args.prefix}{arguments.get('text', '')}")
        if name == "add":
            total = arguments.get("a", 0) + arguments.get("b", 0)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps({"sum": total}))],
                structured_content={"sum": total},
                _meta={"fixture/served-by": args.prefix or "fixture"},
            )
        if name == "image":
            return types.CallToolResult(
                content=[types.ImageContent(type="image", data=PIXEL_PNG, mime_type="image/png")]
            )
        if name == "mixed":
            return types.CallToolResult(
                content=[
                    types.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(
                            uri="file:///notes.txt", mime_type="text/plain", text="notes"
                        ),
                    ),
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.BlobResourceContents(
                            uri="file:///blob.bin",
                            mime_type="application/octet-stream",
                            blob="AAE=",
                        ),
                    ),
                    types.ResourceLink(
                        type="resource_link", uri="file:///report.pdf", name="report"
                    ),
                ]
            )
        if name == "fail":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="it failed")], is_error=True
            )
        if name == "slow":
            await anyio.sleep(float(arguments.get("seconds", 1)))
            return text("slept")
        if name == "env":
            return text(json.dumps(dict(os.environ)))
        if name == "headers":
            request = ctx.request
            return text(json.dumps(dict(request.headers) if request is not None else {}))
        if name == "progress":
            token = (ctx.meta or {}).get("progress_token", (ctx.meta or {}).get("progressToken"))
            for step in range(1, 4):
                if token is not None:
                    await ctx.session.send_progress_notification(token, step, 3, f"step {step}")
            return text("done")
        if name == "big":
            return text("x" * int(arguments.get("size", 1)))
        if name == "garbage":
            # The SDK diverts fd 1 while serving; write to the wire it really uses.
            from mcp.server import stdio as sdk_stdio

            wire = sdk_stdio._claims[1].private_fd
            os.write(wire, b"this is not JSON-RPC {{{\n")
            return text("after garbage")
        if name == "wait_cancel":
            with open(arguments["marker"] + ".started", "w") as started:
                started.write("started")
            try:
                await anyio.sleep(3600)
            except anyio.get_cancelled_exc_class():
                with open(arguments["marker"], "w") as marker:
                    marker.write("cancelled")
                raise
            return text("never")
        if name == "explode":
            raise RuntimeError("kaboom")
        if name == "raise_code":
            raise MCPError(int(arguments["code"]), str(arguments["message"]))
        if name == "leak":
            for variable in arguments.get("names", []):
                print(f"{variable}={os.environ.get(variable, '')}", file=sys.stderr, flush=True)
            return text("leaked")
        if name == "shout":
            line = "x" * int(arguments.get("size", 10))
            for _ in range(int(arguments.get("lines", 1))):
                print(line, file=sys.stderr, flush=True)
            return text("shouted")
        if name.startswith("tool_"):
            return text(name)
        raise ValueError(f"unknown tool {name}")

    return Server("fixture", on_list_tools=list_tools, on_call_tool=call_tool)


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--prefix", default="")
    parser.add_argument("--description-size", type=int, default=0)
    parser.add_argument("--leak-env", action="append", default=[])
    parser.add_argument("--hang-initialize", action="store_true")
    parser.add_argument("--exit-at-start", action="store_true")
    parser.add_argument("--crash-on-call", action="store_true")
    parser.add_argument("--garbage-at-start", action="store_true")
    parser.add_argument("--print-args", action="store_true")
    parser.add_argument(
        "--destructive", action="append", default=[], help="a tool annotated destructiveHint"
    )
    parser.add_argument(
        "--stubborn",
        action="store_true",
        help="ignore SIGTERM and stdin closing, and keep a child process of its own",
    )
    args = parser.parse_args()
    if args.stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # A grandchild with the same marker: only a kill of the process group ends it.
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(3600)", "--prefix", args.prefix]
        )
    if args.garbage_at_start:
        print("Starting fixture server... (a banner on stdout, as some servers print)")
        sys.stdout.flush()
    if args.print_args:
        print(f"fixture server started with {' '.join(sys.argv[1:])}", file=sys.stderr, flush=True)
    for variable in args.leak_env:
        print(f"token={os.environ.get(variable, '')}", file=sys.stderr, flush=True)
    if args.exit_at_start:
        print("fixture server: exiting at start as asked", file=sys.stderr)
        sys.exit(2)
    if args.hang_initialize:
        # Read stdin forever, answer nothing: a server that never finishes `initialize`.
        # Its own descriptor 0, not /dev/stdin: reopening the gateway's pipe through /proc
        # is refused to a sandboxed server's uid.
        stdin = anyio.wrap_file(os.fdopen(0, "rb", buffering=0, closefd=False))
        while await stdin.read(65536):
            pass
        return
    server = build(args)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
    if args.stubborn:
        await anyio.sleep(3600)  # stdin closed: a polite server would exit now


if __name__ == "__main__":
    anyio.run(main)
