"""A stdio MCP server that leaves a mark in the package caches of its HOME, as npm (`~/.npm`)
and uv or pip (`~/.cache`) would, and says what earlier spawns left there.

    python tests/servers/cache_server.py [--delay SECONDS]

Tools: `visit` (appends this process's mark to `~/.npm/visits` and `~/.cache/visits`, once,
and answers JSON: the marks found there before it wrote, its uid, and the owner and mode of
each cache directory), `exit` (ends the process, as a crash would). `--delay` waits that long
before it serves, as a cold `npx -y` server does while it downloads.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import uuid
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

CACHES = (".npm", ".cache")
MARK = uuid.uuid4().hex  # this spawn's


def visit(written: set[str]) -> dict[str, Any]:
    report: dict[str, Any] = {"mark": MARK, "uid": os.getuid()}
    for name in CACHES:
        directory = Path.home() / name
        visits = directory / "visits"
        found = visits.read_text().split() if visits.exists() else []
        if name not in written:
            with visits.open("a") as file:
                file.write(MARK + "\n")
            written.add(name)
        info = directory.stat()
        report[name] = {
            "before": [mark for mark in found if mark != MARK],
            "owner": info.st_uid,
            "mode": oct(stat.S_IMODE(info.st_mode)),
        }
    return report


def build() -> Server:
    written: set[str] = set()

    async def list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        schema: dict[str, Any] = {"type": "object"}
        return types.ListToolsResult(
            tools=[
                types.Tool(name="visit", description="Mark the caches", input_schema=schema),
                types.Tool(name="exit", description="End the process", input_schema=schema),
            ]
        )

    async def call_tool(ctx: ServerRequestContext, params: Any) -> types.CallToolResult:
        if params.name == "exit":
            os._exit(3)
        text = json.dumps(visit(written))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("cache", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    await anyio.sleep(parser.parse_args().delay)  # a slow start, not a synchronisation
    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
