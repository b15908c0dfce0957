"""The SDK `Server` that clients talk to: two meta-tools and per-caller instructions.

Served stateless, so any gateway process can answer any request; what must outlive a
request (open toolboxes) is in the shared store. The caller (tenant and key) is put in the
ASGI scope by `http` before the SDK sees the request.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult

from mcp_gateway import __version__, errors, instructions
from mcp_gateway.auth import Caller
from mcp_gateway.cancellation import InFlightCalls
from mcp_gateway.errors import ErrorCode, GatewayError
from mcp_gateway.metatools import META_TOOLS, MetaTools, error_result

CALLER_STATE = "workbench_caller"
SESSION_STATE = "workbench_session_id"


def _caller(ctx: ServerRequestContext[Any, Any]) -> tuple[Caller, str | None]:
    state = ctx.request.scope["state"]  # set by mcp_gateway.http for every request
    return state[CALLER_STATE], state.get(SESSION_STATE)


def _progress_forwarder(ctx: ServerRequestContext[Any, Any]) -> Any:
    """Relays a downstream tool's progress on the caller's own request stream, when the
    caller asked for progress (else the downstream is not asked for it either)."""
    if (ctx.meta or {}).get("progress_token") is None:
        return None

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        await ctx.session.report_progress(progress, total, message)

    return forward


def build_server(metatools: MetaTools, in_flight: InFlightCalls | None = None) -> Server[Any]:
    """`in_flight`: the calls a client's `notifications/cancelled` may reach (`http` also
    applies those itself, before a stateless request's server may be gone)."""
    in_flight = in_flight if in_flight is not None else InFlightCalls()

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=META_TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller, session_id = _caller(ctx)
        if params.name == "open_toolbox":
            return await metatools.open_toolbox(caller, params.arguments)
        if params.name == "use_tool":
            owner = (caller.key.key_id, session_id) if session_id else None
            with in_flight.track(owner, ctx.request_id):
                return await metatools.use_tool(caller, params.arguments, _progress_forwarder(ctx))
            # Cancelled by the client: nobody waits for this answer any more.
            return error_result(errors.cancelled())
        return error_result(
            GatewayError(
                ErrorCode.INVALID_PARAMETERS,
                f"Unknown tool: '{params.name}'. This server offers open_toolbox and use_tool.",
            )
        )

    async def per_caller_instructions(
        ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            caller, _ = _caller(ctx)
            result = {**result, "instructions": instructions.render(caller)}
        return result

    server: Server[Any] = Server(
        "workbench",
        version=__version__,
        title="Workbench MCP gateway",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    # Replaces the SDK's default middleware: the telemetry seam brings the SDK's own
    # OpenTelemetry middleware back only when spans are exported (telemetry.configure_tracing).
    server.middleware = [
        *metatools.telemetry.middlewares(SESSION_STATE, CALLER_STATE),
        per_caller_instructions,
    ]

    async def cancelled(
        ctx: ServerRequestContext[Any, Any], params: types.CancelledNotificationParams
    ) -> None:
        caller, session_id = _caller(ctx)
        if session_id and params.request_id is not None:
            in_flight.cancel((caller.key.key_id, session_id), params.request_id)

    server.add_notification_handler(
        "notifications/cancelled", types.CancelledNotificationParams, cancelled
    )
    return server
