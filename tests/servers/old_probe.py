"""A stdio MCP server on the `mcp` SDK 1.x (tests/.mcp1-venv), which speaks 2025-11-25 only:
it asks the client for input with a request during the call (issue 34).

    tests/.mcp1-venv/bin/python tests/servers/old_probe.py

Tools: `ask_form` (a form elicitation), `ask_sample` (sampling), `ask_roots` (roots);
each answers `answered <json>` (the client's answer as JSON), or the error the client's
answer was, as the tool's JSON-RPC error. `declared`: the capabilities the client declared
at its `initialize`, as JSON (sorted keys).
"""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types
from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("old-probe")
FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


def answered(answer: Any) -> str:
    return "answered " + answer.model_dump_json(by_alias=True, exclude_none=True)


@server.tool()
async def ask_form(ctx: Context) -> str:
    """Ask the client to fill in a form (elicitation), then answer."""
    answer = await ctx.session.elicit_form(
        message="Your name?", requestedSchema=FORM_SCHEMA, related_request_id=ctx.request_id
    )
    return answered(answer)


@server.tool()
async def ask_sample(ctx: Context) -> str:
    """Ask the client's model for a message (sampling), then answer."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))
    answer = await ctx.session.create_message(
        messages=[message], max_tokens=10, related_request_id=ctx.request_id
    )
    return answered(answer)


@server.tool()
async def ask_roots(ctx: Context) -> str:
    """Ask the client for its roots, then answer."""
    return answered(await ctx.session.list_roots())


@server.tool()
async def declared(ctx: Context) -> str:
    """Return the capabilities the client declared at its initialize."""
    params = ctx.session.client_params
    wire = (
        {}
        if params is None
        else params.capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
    )
    return json.dumps(wire, sort_keys=True)


if __name__ == "__main__":
    server.run("stdio")
