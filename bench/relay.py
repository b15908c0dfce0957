"""The relay (issue 34): what a downstream server says besides a result, seen by the client
that called it, directly, through Workbench (`use_tool`, and the toolbox endpoint) and
through FastMCP's proxy, from one run, for both protocol generations.

    .venv/bin/python bench/relay.py [--quick] [--json PATH]

Two stdio servers: tests/servers/relay_probe.py (a tool definition with `icons`, `_meta`
and `execution`; a JSON-RPC error with `data`; the request `_meta` echoed; four log
messages; a tool added at run time with `tools/list_changed`; `ask_form`, `ask_url`,
`ask_sample`, `ask_roots`, which ask the client for input as its revision says) and
tests/servers/fixture_server.py (progress, every content kind, `structuredContent`). The
client is the SDK's: `ClientSession` (2025-11-25, `initialize`) and `mcp.Client`
(2026-07-28, stateless), each path and generation with server processes of its own (the
added tool would otherwise be there already), pinning off. Each client declares
elicitation (form and URL), sampling and roots, with callbacks that answer. Each cell says
what the client saw. Cancellation is not probed here (see the rows).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    BENCH,
    FASTMCP_PYTHON,
    HTTP_TIMEOUT,
    ROOT,
    TENANT,
    Row,
    StdioServer,
    arguments,
    free_port,
    gateway,
    in_fastmcp_venv,
    report,
    serving,
)

SECTION = "17 relay"
SERVERS = ROOT / "tests" / "servers"
PROBE = str(SERVERS / "relay_probe.py")
FIXTURE = str(SERVERS / "fixture_server.py")
GENERATIONS = ("2025-11-25", "2026-07-28")
DIRECT, WORKBENCH, ENDPOINT, FASTMCP = (
    "direct",
    "Workbench use_tool",
    "Workbench toolbox endpoint",
    "FastMCP proxy",
)
PATHS = (DIRECT, WORKBENCH, ENDPOINT, FASTMCP)
SENT_META = {"acme/request": {"ticket": 42}}
REFUSAL = (-32021, {"capability": "elicitation", "mode": "form"})


@dataclass
class Seen:
    """What one client saw of the server's notifications."""

    logs: int = 0
    list_changed: int = 0
    progress: int = 0


async def _elicit(ctx: Any, params: Any) -> types.ElicitResult:
    if getattr(params, "mode", None) == "url":
        return types.ElicitResult(action="accept")
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def _sample(ctx: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="hi"), model="bench"
    )


async def _roots(ctx: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])


# What every client declares and answers: the server's questions (issue 34's relay).
ANSWERS: dict[str, Any] = {
    "elicitation_callback": _elicit,
    "sampling_callback": _sample,
    "list_roots_callback": _roots,
}
ASKS = ("ask_form", "ask_url", "ask_sample", "ask_roots")


@dataclass
class Caller:
    """One client of one path, one generation: calls a server's tool by its own name."""

    path: str
    call: Callable[..., Any]  # (server, tool, args, **kw) -> CallToolResult
    tools: Callable[..., Any]  # () -> {(server, tool): definition as a dict}
    seen: Seen = field(default_factory=Seen)


def dumped(tool: Any) -> dict[str, Any]:
    return tool.model_dump(by_alias=True, mode="json", exclude_none=True)


async def client_of(
    stack: AsyncExitStack, generation: str, transport: Any, seen: Seen
) -> ClientSession | Client:
    """A 2025-11-25 `ClientSession` or a 2026-07-28 `mcp.Client` over `transport` (an
    entered stdio or HTTP transport's streams for the session; the transport itself for
    the client), counting log messages and list_changed."""

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        seen.logs += 1

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            seen.list_changed += 1

    if generation == GENERATIONS[0]:
        read, write = transport
        session = await stack.enter_async_context(
            ClientSession(
                read, write, logging_callback=on_log, message_handler=on_message, **ANSWERS
            )
        )
        await session.initialize()
        return session
    return await stack.enter_async_context(
        Client(
            transport,
            logging_callback=on_log,
            log_level="debug",
            message_handler=on_message,
            cache=None,
            **ANSWERS,
        )
    )


async def http_client(
    stack: AsyncExitStack, generation: str, url: str, key: str | None, seen: Seen
) -> ClientSession | Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT)
    )
    transport = streamable_http_client(url, http_client=http)
    if generation == GENERATIONS[0]:
        read, write, *_ = await stack.enter_async_context(transport)
        return await client_of(stack, generation, (read, write), seen)
    return await client_of(stack, generation, transport, seen)


@asynccontextmanager
async def direct(generation: str) -> AsyncIterator[Caller]:
    seen = Seen()
    async with AsyncExitStack() as stack:
        sessions = {}
        for name, script in (("probe", PROBE), ("fixture", FIXTURE)):
            params = StdioServerParameters(command=sys.executable, args=[script])
            if generation == GENERATIONS[0]:
                streams = await stack.enter_async_context(stdio_client(params))
                sessions[name] = await client_of(stack, generation, streams, seen)
            else:
                sessions[name] = await client_of(stack, generation, params, seen)

        async def call(server: str, tool: str, args: dict[str, Any], **kw: Any) -> Any:
            return await sessions[server].call_tool(tool, args, **kw)

        async def tools() -> dict[tuple[str, str], dict[str, Any]]:
            return {
                (server, tool.name): dumped(tool)
                for server, session in sessions.items()
                for tool in (await session.list_tools()).tools
            }

        yield Caller(DIRECT, call, tools, seen)


@asynccontextmanager
async def through_use_tool(
    url: str, key: str, toolbox: str, generation: str
) -> AsyncIterator[Caller]:
    seen = Seen()
    async with AsyncExitStack() as stack:
        session = await http_client(stack, generation, f"{url}/t/{TENANT}", key, seen)

        async def call(server: str, tool: str, args: dict[str, Any], **kw: Any) -> Any:
            named = {
                "tool": {"toolbox": toolbox, "server": server, "name": tool},
                "arguments": args,
            }
            return await session.call_tool("use_tool", named, **kw)

        async def tools() -> dict[tuple[str, str], dict[str, Any]]:
            opened = await session.call_tool("open_toolbox", {"toolbox": toolbox})
            entries = (opened.structured_content or {}).get("tools", [])
            return {(entry["server"], entry["name"]): entry for entry in entries}

        await tools()
        yield Caller(WORKBENCH, call, tools, seen)


@asynccontextmanager
async def named_path(
    path: str, url: str, key: str | None, generation: str, separator: str
) -> AsyncIterator[Caller]:
    """A path that names each tool `<server><separator><tool>`: the toolbox endpoint
    (`__`) and FastMCP's proxy (`_`)."""
    seen = Seen()
    async with AsyncExitStack() as stack:
        session = await http_client(stack, generation, url, key, seen)

        async def call(server: str, tool: str, args: dict[str, Any], **kw: Any) -> Any:
            return await session.call_tool(f"{server}{separator}{tool}", args, **kw)

        async def tools() -> dict[tuple[str, str], dict[str, Any]]:
            found = {}
            for tool in (await session.list_tools()).tools:
                server, _, name = tool.name.partition(separator)
                found[(server, name)] = dumped(tool)
            return found

        yield Caller(path, call, tools, seen)


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    pass


def refusal_code(result: Any) -> str:
    """A refused call's code (the gateway's) or the start of its text."""
    code = ((result.structured_content or {}).get("error") or {}).get("code")
    if code:
        return str(code)
    text = result.content[0].text if result.content else ""
    return text[:60]


def downstream_error(result: Any) -> tuple[Any, Any] | None:
    """A downstream JSON-RPC error's code and data, where a result carries them."""
    details = ((result.structured_content or {}).get("error") or {}).get("details") or {}
    if "downstream_code" in details:
        return details["downstream_code"], details.get("downstream_data")
    return None


async def probe(caller: Caller, generation: str) -> dict[str, str]:
    """Each feature's cell for this caller."""
    cells: dict[str, str] = {}
    seen = caller.seen

    async def count_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.progress += 1

    result = await caller.call("fixture", "progress", {}, progress_callback=count_progress)
    cells["progress (3 sent)"] = f"{seen.progress}/3" + (" (an error)" if result.is_error else "")

    kinds = []
    for tool in ("image", "mixed"):
        answered = await caller.call("fixture", tool, {})
        kinds += [content.type for content in answered.content]
    added = await caller.call("fixture", "add", {"a": 2, "b": 3})
    structured = added.structured_content == {"sum": 5}
    cells["content kinds, structuredContent"] = f"{', '.join(kinds)}; structured: {structured}"

    tools = await caller.tools()
    decorated = tools.get(("probe", "decorated"), {})
    kept = [part for part in ("icons", "_meta", "execution") if part in decorated]
    cells["tool icons, _meta, execution"] = ", ".join(kept) or "none kept"

    log_kw: dict[str, Any] = {}
    if generation == GENERATIONS[0] and caller.path != DIRECT:
        log_kw["progress_callback"] = _no_progress  # a stream for the call
    await caller.call("probe", "log", {}, **log_kw)
    cells["log messages (4 sent)"] = f"{seen.logs}/4"

    echoed = await caller.call("probe", "echo_meta", {}, meta=SENT_META)
    got = echoed.structured_content or {}
    if not got and echoed.content:
        try:
            got = json.loads(echoed.content[0].text)
        except (ValueError, AttributeError):
            got = {}
    cells["request _meta (a custom key)"] = (
        "reaches the server" if got.get("acme/request") == {"ticket": 42} else "dropped"
    )

    try:
        refused = await caller.call("probe", "refuse", {})
        own = downstream_error(refused)
        if own == REFUSAL:
            cells["downstream error: code, data"] = "in details: -32021, data intact"
        else:
            cells["downstream error: code, data"] = "lost (a tool error result)"
    except MCPError as exc:
        intact = (exc.error.code, exc.error.data) == REFUSAL
        cells["downstream error: code, data"] = f"JSON-RPC error {exc.error.code}" + (
            ", data intact" if intact else ", data lost"
        )

    answered = []
    for tool in ASKS:
        try:
            asked = await caller.call("probe", tool, {}, **log_kw)
        except MCPError:
            continue
        text = asked.content[0].text if asked.content else ""
        if not asked.is_error and text.startswith("answered "):
            answered.append(tool.removeprefix("ask_"))
    cells["elicitation form, URL; sampling; roots: answered"] = f"{len(answered)}/4" + (
        f" ({', '.join(answered)})" if 0 < len(answered) < 4 else ""
    )

    before = seen.list_changed
    await caller.call("probe", "add_tool", {})
    listed = ("probe", "added") in await caller.tools()
    answer = await caller.call("probe", "added", {})
    callable_ = "True" if not answer.is_error else f"False ({refusal_code(answer)})"
    cells["tools/list_changed: notifications; new tool listed, callable"] = (
        f"{seen.list_changed - before}; {listed}, {callable_}"
    )
    return cells


FEATURES = (
    "progress (3 sent)",
    "content kinds, structuredContent",
    "tool icons, _meta, execution",
    "log messages (4 sent)",
    "request _meta (a custom key)",
    "downstream error: code, data",
    "elicitation form, URL; sampling; roots: answered",
    "tools/list_changed: notifications; new tool listed, callable",
)


def fastmcp_missing() -> str | None:
    done = in_fastmcp_venv("import fastmcp, uvicorn")
    if done is None:
        return "not measured: bench/.fastmcp-venv is missing (make bench creates it)"
    if done.returncode != 0:
        return "not measured: bench/.fastmcp-venv is incomplete"
    return None


async def measure(urls: dict[str, str], key: str) -> dict[tuple[str, str], dict[str, str]]:
    """(path, generation) -> feature -> cell."""
    table: dict[tuple[str, str], dict[str, str]] = {}
    for index, generation in enumerate(GENERATIONS):
        toolbox = f"use{index}"
        endpoint = f"{urls[WORKBENCH]}/t/{TENANT}/toolboxes/tb{index}"
        openers = {
            DIRECT: lambda g=generation: direct(g),
            WORKBENCH: lambda g=generation, t=toolbox: through_use_tool(urls[WORKBENCH], key, t, g),
            ENDPOINT: lambda g=generation, e=endpoint: named_path(ENDPOINT, e, key, g, "__"),
        }
        if f"{FASTMCP} {generation}" in urls:
            url = urls[f"{FASTMCP} {generation}"]
            openers[FASTMCP] = lambda g=generation, u=url: named_path(FASTMCP, u, None, g, "_")
        for path, opener in openers.items():
            try:
                async with opener() as caller:
                    table[(path, generation)] = await probe(caller, generation)
            except Exception as exc:  # a path that breaks is reported, not fatal
                table[(path, generation)] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}
    return table


def main() -> None:
    parser = arguments(__doc__ or "")
    options = parser.parse_args()
    rows: list[Row] = []
    missing = "not measured: --quick" if options.quick else fastmcp_missing()
    # Pinning off: the relay is measured, not pinning (whose default, trust-first, holds a
    # tool added at run time for an admin: TOOL_NOT_APPROVED until approved).
    unpinned = {"pinning": "off"}
    servers = [
        StdioServer("probe", sys.executable, (PROBE,), fields=unpinned),
        StdioServer("fixture", sys.executable, (FIXTURE,), fields=unpinned),
    ]
    toolboxes = {name: servers for name in ("use0", "use1", "tb0", "tb1")}
    with ExitStack() as stack:
        running = stack.enter_context(gateway(toolboxes))
        urls = {WORKBENCH: running.url.rstrip("/")}
        if missing is None:
            for generation in GENERATIONS:  # a proxy (and servers) per generation
                port = free_port()
                command = [
                    str(FASTMCP_PYTHON),
                    str(BENCH / "fastmcp_relay_proxy.py"),
                    "--port",
                    str(port),
                    "--python",
                    sys.executable,
                ]
                stack.enter_context(serving(command, port, "fastmcp relay proxy"))
                urls[f"{FASTMCP} {generation}"] = f"http://127.0.0.1:{port}/mcp"
        import anyio

        table = anyio.run(measure, urls, running.key)
    for generation in GENERATIONS:
        for feature in FEATURES:
            cells = []
            for path in PATHS:
                found = table.get((path, generation))
                if found is None:
                    cells.append(f"{path}: {missing or 'not measured'}")
                else:
                    cells.append(f"{path}: {found.get(feature, found.get('error', '?'))}")
            rows.append(Row(SECTION, f"{generation}: {feature}", "; ".join(cells)))
    rows.append(
        Row(
            SECTION,
            "cancellation",
            "not probed here: tested end to end by tests/e2e (the server gets "
            "notifications/cancelled, 2 workers too)",
        )
    )
    report(rows, options.json, "The relay, beside FastMCP's proxy")


if __name__ == "__main__":
    main()
