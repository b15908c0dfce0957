"""The three meta-tools as a client lists them, and how their answers are shaped: a tool
entry of open_toolbox's list, a GatewayError as a tool result."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from kernel.redaction import Redactor
from mcp_gateway.metatools.errors import GatewayError
from mcp_gateway.metatools.schemas import (
    OPEN_TOOLBOX_INPUT_SCHEMA,
    SEARCH_TOOLS_INPUT_SCHEMA,
    USE_TOOL_INPUT_SCHEMA,
)
from mcp_gateway.observe.outcome import Named, Outcome
from mcp_gateway.snapshots.servers import ServerConfig, ToolboxConfig

OPEN_TOOLBOX = types.Tool(
    name="open_toolbox",
    title="Open a toolbox",
    description=(
        "Open one of the toolboxes listed in this server's instructions: connects its "
        "servers and returns their tools (name, description, inputSchema, server). Call it "
        "before use_tool; opening an open toolbox again is cheap and returns the same list."
    ),
    input_schema=OPEN_TOOLBOX_INPUT_SCHEMA,
    annotations=types.ToolAnnotations(
        title="Open a toolbox", read_only_hint=True, idempotent_hint=True, open_world_hint=True
    ),
)

USE_TOOL = types.Tool(
    name="use_tool",
    title="Use a tool from an open toolbox",
    description=(
        "Call one tool from a toolbox opened with open_toolbox. Name it exactly as "
        "open_toolbox listed it: {toolbox, server, name}; pass its arguments (matching its "
        "inputSchema) as `arguments`. Returns the tool's own result."
    ),
    input_schema=USE_TOOL_INPUT_SCHEMA,
    annotations=types.ToolAnnotations(title="Use a tool", open_world_hint=True),
)

SEARCH_TOOLS = types.Tool(
    name="search_tools",
    title="Search the tools of every toolbox",
    description=(
        "Find tools by what you want to do, across every toolbox you may open (or one, "
        "with `toolbox`): returns the best matches first, each with name, description, "
        "inputSchema, server and toolbox, ready for use_tool without open_toolbox. Use it "
        "when the right toolbox is not obvious; `limit` (1-50, default 10) caps the list."
    ),
    input_schema=SEARCH_TOOLS_INPUT_SCHEMA,
    annotations=types.ToolAnnotations(
        title="Search tools", read_only_hint=True, idempotent_hint=True, open_world_hint=True
    ),
)

META_TOOLS = [OPEN_TOOLBOX, USE_TOOL, SEARCH_TOOLS]
# What a client that names another tool is told this server offers.
META_TOOL_NAMES = "open_toolbox, use_tool and search_tools"


def error_result(error: GatewayError) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=error.message)],
        structured_content=error.as_structured(),
        is_error=True,
    )


def failed(
    error: GatewayError,
    named: Named,
    toolbox: ToolboxConfig | None = None,
    server: ServerConfig | None = None,
    redactors: tuple[Redactor, ...] = (),
) -> Outcome:
    """The outcome of a call the gateway answers with its own error."""
    return Outcome(
        error_result(error),
        named,
        toolbox,
        server,
        error_code=error.code.value,
        incident=str(error.details.get("incident", "")),
        redactors=redactors,
        recorded_as=error.recorded_as,
        decision=error.decision,
    )


def tool_entry(tool: types.Tool, server: str, toolbox: str) -> dict[str, Any]:
    """A tool as open_toolbox lists it: the server's definition (its `icons`, `_meta` and
    `execution` unchanged when present), and where it comes from."""
    entry: dict[str, Any] = {"name": tool.name}
    if tool.title is not None:
        entry["title"] = tool.title
    if tool.description is not None:
        entry["description"] = tool.description
    entry["inputSchema"] = tool.input_schema
    if tool.output_schema is not None:
        entry["outputSchema"] = tool.output_schema
    if tool.annotations is not None:
        entry["annotations"] = tool.annotations.model_dump(by_alias=True, exclude_none=True)
    if tool.icons is not None:
        entry["icons"] = [
            icon.model_dump(by_alias=True, mode="json", exclude_none=True) for icon in tool.icons
        ]
    if tool.execution is not None:
        execution = tool.execution.model_dump(by_alias=True, mode="json", exclude_none=True)
        entry["execution"] = execution
    if tool.meta is not None:
        entry["_meta"] = tool.meta
    entry["server"] = server
    entry["toolbox"] = toolbox
    return entry
