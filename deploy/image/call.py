"""Call a tool through a running Workbench with the real `mcp` client (deploy/image/test.sh).

    python deploy/image/call.py URL KEY TOOLBOX SERVER TOOL [ARGUMENTS_JSON]

Opens the toolbox, calls the tool with `use_tool`, and prints one JSON line: the tool's
text (`answer`), whether it was an error, and the seconds each step took. Exit status 1
when the toolbox did not open or the call failed, the JSON saying why.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


def _text(result: Any) -> str:
    return "\n".join(item.text for item in result.content if getattr(item, "text", None))


async def call(url: str, key: str, toolbox: str, server: str, tool: str, arguments: Any) -> dict:
    report: dict[str, Any] = {"ok": False}
    started = time.perf_counter()
    # A cold stdio server starts while open_toolbox waits: seconds, not milliseconds.
    timeout = httpx2.Timeout(30, read=120)
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        opened = await session.call_tool("open_toolbox", {"toolbox": toolbox})
        report["open_seconds"] = round(time.perf_counter() - started, 3)
        if opened.is_error or not (opened.structured_content or {}).get("tools"):
            report["error"] = _text(opened)
            return report
        reference = {"toolbox": toolbox, "server": server, "name": tool}
        before = time.perf_counter()
        result = await session.call_tool("use_tool", {"tool": reference, "arguments": arguments})
        report["call_seconds"] = round(time.perf_counter() - before, 3)
        report["answer"] = _text(result)
        report["ok"] = not result.is_error
    return report


def main(argv: list[str]) -> int:
    url, key, toolbox, server, tool = argv[:5]
    arguments = json.loads(argv[5]) if len(argv) > 5 else {}
    try:
        report = asyncio.run(call(url, key, toolbox, server, tool, arguments))
    except Exception as exc:  # the report says what failed, for the script to show
        report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
