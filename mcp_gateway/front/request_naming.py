"""The SDK middleware that names each MCP request (session, client, tenant) for the call
log and the JSON log lines, and, when tracing, the SDK's own span per request with the
gateway's attributes added."""

from __future__ import annotations

from typing import Any

from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from mcp_gateway.downstream.envelope import relayed
from mcp_gateway.front.request_state import RequestState
from mcp_gateway.observe import request_context, tracing
from mcp_gateway.observe.client_names import (
    ClientInfo,
    ClientNames,
    client_of,
    declares_url_elicitation,
)
from mcp_gateway.observe.request_context import RequestInfo


def request_middlewares(client_names: ClientNames | None, spans: bool) -> list[Any]:
    """Context-tier middleware for the SDK `Server`; the SDK's OpenTelemetry middleware
    comes back only when spans are exported (`spans`: the recorder's `tracing`)."""

    async def name_request(
        ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        state = RequestState.of(ctx.request.scope) if ctx.request is not None else None
        session_id = state.session_id if state is not None else None
        client = client_of(ctx)
        if client is None and session_id and client_names is not None:
            found = await client_names.find(session_id)
            client = (found.name, found.version)
            if state is not None:
                state.url_elicitation = found.url_elicitation
        elif client is not None and ctx.method == "initialize" and client_names is not None:
            new_session = state.new_session_id if state is not None else None
            if new_session:
                declared = relayed((ctx.params or {}).get("capabilities"))
                named = ClientInfo(*client, declares_url_elicitation(ctx), declared)
                await client_names.save(new_session, named)
        tenant = state.caller.tenant.slug if state is not None else ""
        info = RequestInfo(session_id, *(client or ("", "")), str(ctx.request_id or ""), tenant)
        token = request_context.current.set(info)
        if spans:
            tracing.annotate_request(info, tenant)
        try:
            return await call_next(ctx)
        finally:
            request_context.current.reset(token)

    if not spans:
        return [name_request]
    return [OpenTelemetryMiddleware(), name_request]
