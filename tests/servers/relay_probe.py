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
- `declared`: returns the capabilities its client declared (on 2025-11-25 at the
  session's `initialize`, on 2026-07-28 in this request), as JSON text (sorted keys) and
  structured, `{}` for none;
- `log`: sends one `notifications/message` per level of `levels` (default debug, info,
  warning, error; data `"<level> message"`, logger `probe`), then answers `logged`;
- `add_tool`: adds the tool `added` (which answers `added here`) and announces it with
  `notifications/tools/list_changed` (on 2026-07-28, to the `subscriptions/listen`
  streams that asked for it), then answers `added`;
- `flood`: sends `count` `notifications/message` (written straight to stdout, as fast as
  the pipe takes them), then answers `flooded <count>`;
- `wait`: sleeps `seconds` (default 30), then answers `waited`;
- `ask_forever`: on 2026-07-28, asks the form of `ask_form` again at every retry (an
  input-required result each time, never an answer);
- `ask_form`, `ask_url`, `ask_sample`, `ask_roots`: ask the client for input (form and URL
  elicitation, sampling, roots) the way the calling client's protocol revision says: on
  2025-11-25 a request during the call (`elicitation/create`, ...), on 2026-07-28 an
  input-required result (`inputRequests` under the key `ask`, `requestState`
  `probe-state`), answered by the retry. The answer: `answered <json>` (the client's
  answer as JSON). A client that did not declare the capability gets -32021
  (`Client did not declare the <capability> capability`); a retry whose `requestState`
  is not the probe's gets -32602 `requestState lost`.

Resources (`probe://<name>`) and prompts (`<name>`), for the toolbox endpoint's other
requests: `echo_meta` (the request `_meta` it received, as JSON text), `progress`
(reports progress three times, `step <n>` of 3, then answers `done`), `log` (one log
message per level of `LEVELS`, then `logged`), `ask_form` (asks the form as the tool
does, then answers `answered <json>`; refused alike), `wait` (reports progress `waiting`, sleeps 30
seconds, then answers `waited`). A resource's text, or the prompt's
one user message, is the answer. Completions: the one value is the request `_meta` it
received, as JSON text.
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
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

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
    _tool("declared", "Return the capabilities this server's client declared"),
    _tool("log", "Send one log message per level of `levels`, then answer"),
    _tool("add_tool", "Add the tool `added` and announce it with tools/list_changed"),
    _tool("flood", "Send `count` log messages as fast as possible, then answer"),
    _tool("wait", "Sleep `seconds`, then answer"),
    _tool("ask_form", "Ask the client to fill in a form (elicitation), then answer"),
    _tool("ask_url", "Ask the client to open a URL (URL elicitation), then answer"),
    _tool("ask_sample", "Ask the client's model for a message (sampling), then answer"),
    _tool("ask_roots", "Ask the client for its roots, then answer"),
    _tool("ask_forever", "Ask the client a form at every retry, never answering"),
]
PROBE_STATE = "probe-state"
FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
# What each `ask_*` tool asks: the request, and the capability the client must declare.
ASKS: dict[str, tuple[types.InputRequest, types.ClientCapabilities, str]] = {
    "ask_form": (
        types.ElicitRequest(
            params=types.ElicitRequestFormParams(message="Your name?", requested_schema=FORM_SCHEMA)
        ),
        types.ClientCapabilities(elicitation=types.ElicitationCapability()),
        "form elicitation",
    ),
    "ask_url": (
        types.ElicitRequest(
            params=types.ElicitRequestURLParams(
                message="Sign in to the probe",
                url="https://example.org/probe/sign-in",
                elicitation_id="probe-sign-in",
            )
        ),
        types.ClientCapabilities(elicitation=types.ElicitationCapability()),
        "URL elicitation",
    ),
    "ask_sample": (
        types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[
                    types.SamplingMessage(
                        role="user", content=types.TextContent(type="text", text="Say hi")
                    )
                ],
                max_tokens=10,
            )
        ),
        types.ClientCapabilities(sampling=types.SamplingCapability()),
        "sampling",
    ),
    "ask_roots": (
        types.ListRootsRequest(),
        types.ClientCapabilities(roots=types.RootsCapability()),
        "roots",
    ),
}
ANSWER_TYPES: dict[str, type[types.Result]] = {
    "elicitation/create": types.ElicitResult,
    "sampling/createMessage": types.CreateMessageResult,
    "roots/list": types.ListRootsResult,
}

ADDED = _tool("added", "A tool added at run time")

# What a resource or a prompt does, by name (the module's docstring).
MEMBER_REQUESTS = ["echo_meta", "progress", "log", "ask_form", "wait"]
RESOURCES = [
    types.Resource(uri=f"probe://{name}", name=name, mime_type="text/plain")
    for name in MEMBER_REQUESTS
]
PROMPTS = [types.Prompt(name=name, description=f"The probe's {name}") for name in MEMBER_REQUESTS]


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


def build(wire: BinaryIO | None) -> Server[Any]:
    added = False
    changes = InMemorySubscriptionBus()  # 2026-07-28's listen streams

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[*TOOLS, ADDED] if added else TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
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
        if params.name == "declared":
            declared = ctx.session.client_capabilities
            told = (
                {}
                if declared is None
                else declared.model_dump(by_alias=True, mode="json", exclude_none=True)
            )
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(told, sort_keys=True))],
                structured_content=told,
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
            if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
                await changes.publish(ToolsListChanged())
            else:
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
        if params.name in ASKS:
            asked = await ask(ctx, params, *ASKS[params.name])
            return asked if isinstance(asked, types.InputRequiredResult) else text(asked)
        if params.name == "ask_forever":
            form = ASKS["ask_form"][0]
            return types.InputRequiredResult(
                input_requests={"ask": form}, request_state=PROBE_STATE
            )
        raise MCPError(types.METHOD_NOT_FOUND, f"Unknown tool: {params.name}")

    async def answer(
        ctx: ServerRequestContext[Any, Any],
        params: types.ReadResourceRequestParams | types.GetPromptRequestParams,
        name: str,
    ) -> str | types.InputRequiredResult:
        """What the resource or the prompt `name` answers."""
        if name == "echo_meta":
            return json.dumps(params.model_dump(by_alias=True, mode="json").get("_meta") or {})
        if name == "progress":
            for step in (1, 2, 3):
                await ctx.session.report_progress(step, 3, f"step {step}")
            return "done"
        if name == "log":
            for level in LEVELS:
                notification = types.LoggingMessageNotification(
                    params=types.LoggingMessageNotificationParams(
                        level=level, data=f"{level} message", logger="probe"
                    )
                )
                await ctx.session.send_notification(notification, ctx.request_id)
            return "logged"
        if name == "ask_form":
            return await ask(ctx, params, *ASKS["ask_form"])
        if name == "wait":
            await ctx.session.report_progress(0, None, "waiting")
            await anyio.sleep(30)
            return "waited"
        raise MCPError(types.INVALID_PARAMS, f"Unknown: {name}")

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=RESOURCES)

    async def list_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[])

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        uri = str(params.uri)
        answered = await answer(ctx, params, uri.removeprefix("probe://"))
        if isinstance(answered, types.InputRequiredResult):
            return answered
        contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=answered)
        return types.ReadResourceResult(contents=[contents])

    async def list_prompts(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=PROMPTS)

    async def get_prompt(
        ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        answered = await answer(ctx, params, params.name)
        if isinstance(answered, types.InputRequiredResult):
            return answered
        content = types.TextContent(type="text", text=answered)
        message = types.PromptMessage(role="user", content=content)
        return types.GetPromptResult(messages=[message])

    async def complete(
        ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        meta = params.model_dump(by_alias=True, mode="json").get("_meta") or {}
        return types.CompleteResult(completion=types.Completion(values=[json.dumps(meta)]))

    return Server(
        "relay-probe",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
        on_subscriptions_listen=ListenHandler(changes),
    )


async def ask(
    ctx: ServerRequestContext[Any, Any],
    params: types.InputResponseRequestParams,
    request: types.InputRequest,
    capability: types.ClientCapabilities,
    named: str,
) -> str | types.InputRequiredResult:
    """One question to the client, on the client's protocol revision: the answer's text."""
    if params.input_responses is not None:  # 2026-07-28's retry
        if params.request_state != PROBE_STATE:
            raise MCPError(types.INVALID_PARAMS, "requestState lost")
        answer = params.input_responses["ask"]
        return "answered " + answer.model_dump_json(by_alias=True, exclude_none=True)
    if not ctx.session.check_client_capability(capability):
        raise MCPError(REFUSAL_CODE, f"Client did not declare the {named} capability")
    if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return types.InputRequiredResult(input_requests={"ask": request}, request_state=PROBE_STATE)
    answer_type = ANSWER_TYPES[request.method]
    answer = await ctx.session.send_request(
        request,  # type: ignore[arg-type]
        answer_type,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )
    return "answered " + answer.model_dump_json(by_alias=True, exclude_none=True)


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
