"""The SDK `Server` that clients talk to: three meta-tools and per-caller instructions.

Served stateless, so any gateway process can answer any request; what must outlive a
request (open toolboxes) is in the shared store. The caller (tenant and key) is put in the
ASGI scope by `http` (`RequestState`) before the SDK sees the request. Each meta-tool's
outcome goes to the recorder here, the one place that sees both.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, get_args

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from mcp_types import LOG_LEVEL_META_KEY, ElicitRequestURLParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_gateway import __version__
from mcp_gateway.downstream.connection import CallAnswer, LogForward
from mcp_gateway.downstream.envelope import RELAYED_CAPABILITIES, relayed
from mcp_gateway.front import instructions
from mcp_gateway.front.cache_hints import META_TOOL_HINTS
from mcp_gateway.front.cancellation import InFlightCalls
from mcp_gateway.front.questions import Questions
from mcp_gateway.front.request_naming import request_middlewares
from mcp_gateway.front.request_state import RequestState
from mcp_gateway.metatools import errors
from mcp_gateway.metatools.errors import ErrorCode, GatewayError
from mcp_gateway.metatools.member_requests import Relay
from mcp_gateway.metatools.meta_tools import MetaTools
from mcp_gateway.metatools.tools import META_TOOL_NAMES, META_TOOLS, error_result
from mcp_gateway.metatools.use_tool import ToolCall
from mcp_gateway.observe.outcome import Outcome
from mcp_gateway.observe.recorder import Recorder
from mcp_gateway.store.failure import StoreUnavailable

# MCP's log levels, least severe first.
LOG_LEVELS: tuple[str, ...] = get_args(types.LoggingLevel)


def _state(ctx: ServerRequestContext[Any, Any]) -> RequestState:
    assert ctx.request is not None
    state = RequestState.of(ctx.request.scope)  # set by front.http for every request
    assert state is not None
    return state


def progress_forwarder(ctx: ServerRequestContext[Any, Any]) -> ProgressFnT | None:
    """Relays a downstream tool's progress on the caller's own request stream, when the
    caller asked for progress (else the downstream is not asked for it either)."""
    if (ctx.meta or {}).get("progress_token") is None:
        return None

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        await ctx.session.report_progress(progress, total, message)

    return forward


def log_forwarder(ctx: ServerRequestContext[Any, Any]) -> LogForward | None:
    """Relays a downstream server's log messages during a call on the caller's own request
    stream, when the caller asked for them: the request's `_meta` names a level
    (`io.modelcontextprotocol/logLevel`, 2026-07-28's per-request opt-in; a 2025-11-25
    client may send it too), that level and above; or, for a 2025-11-25 client without
    it, every level when the call has a stream at all (it asked for progress). The gateway
    serves statelessly and offers no `logging/setLevel`."""
    meta = ctx.meta or {}
    requested = meta.get(LOG_LEVEL_META_KEY)
    if requested in LOG_LEVELS:
        allowed = frozenset(LOG_LEVELS[LOG_LEVELS.index(requested) :])
    elif meta.get("progress_token") is not None and not modern(ctx):
        allowed = frozenset(LOG_LEVELS)
    else:
        return None

    async def forward(params: types.LoggingMessageNotificationParams) -> None:
        if params.level in allowed:
            await ctx.session.send_notification(
                types.LoggingMessageNotification(params=params), ctx.request_id
            )

    return forward


def relay_input(
    ctx: ServerRequestContext[Any, Any],
    params: types.RequestParams,
    call: ToolCall | Relay,
    questions: Questions | None = None,
) -> None:
    """What a server asking the client for input needs of this call (or a toolbox
    endpoint's other request that may ask: `member_requests`): the client's declared
    elicitation, sampling and roots (the server is told those, no more); a 2026-07-28
    retry's answers and state; for a 2025-11-25 client that declared some at its
    `initialize` (its call then served as a stream: `front.http`), how the server's
    questions are asked of it during the call (`questions`). A 2025-11-25 client that
    declared none: a server asking it gets the answer it gives a client that declared
    nothing."""
    call.capabilities = declared_capabilities(ctx, questions)
    if not modern(ctx):
        if call.capabilities:
            owner = _state(ctx).owner
            assert questions is not None and owner is not None  # declared_capabilities'
            call.ask = questions.asker(ctx, owner)
        return
    call.input_required = True
    if isinstance(params, types.InputResponseRequestParams):  # a completion has no retry
        call.input_responses = params.input_responses
        call.request_state = params.request_state


def declared_capabilities(
    ctx: ServerRequestContext[Any, Any], questions: Questions | None = None
) -> dict[str, Any] | None:
    """The calling client's declared elicitation, sampling and roots (`envelope.relayed`),
    what a server of its call is told, and whose offer its lists show; None: none. A
    2025-11-25 client's, declared at its `initialize`, count only where its questions can
    reach it (`questions`, and a credential to tie the answer to)."""
    if not modern(ctx):
        state = _state(ctx)
        if questions is not None and state.capabilities and state.owner is not None:
            return state.capabilities
        return None
    declared = ctx.session.client_capabilities
    # Dumped only when it declares one of them: a client that declares none tells no server.
    if declared is None or all(getattr(declared, key) is None for key in RELAYED_CAPABILITIES):
        return None
    return relayed(declared.model_dump(by_alias=True, mode="json", exclude_none=True))


def modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the caller speaks 2026-07-28 (or later)."""
    return ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS


def url_elicitation(result: types.CallToolResult) -> UrlElicitationRequiredError:
    """AUTH_REQUIRED or APPROVAL_REQUIRED as a URL elicitation (2025-11-25's -32042), for a
    client that declared it: the contract's text is its message, the connect or approval
    link its URL, so that the client can open it for the person; the error result's details
    ride along in `data`."""
    error = (result.structured_content or {})["error"]
    link = ElicitRequestURLParams(
        mode="url",
        message=error["message"],
        url=error["details"][errors.ELICITED_URLS[ErrorCode(error["code"])]],
        elicitation_id=uuid.uuid4().hex,
    )
    elicitation = UrlElicitationRequiredError([link], message=error["message"])
    elicitation.error.data = {**elicitation.error.data, **error["details"], "code": error["code"]}
    return elicitation


def build_server(
    metatools: MetaTools,
    recorder: Recorder,
    in_flight: InFlightCalls | None = None,
    questions: Questions | None = None,
) -> Server[Any]:
    """`in_flight`: the calls a client's `notifications/cancelled` may reach (`http`
    applies those, before a stateless request's server may be gone); `questions`: where a
    2025-11-25 client's answers to a server's questions are led (`http` applies those)."""
    in_flight = in_flight if in_flight is not None else InFlightCalls()

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=META_TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> CallAnswer:
        try:
            return await meta_tool(ctx, params)
        except StoreUnavailable as exc:  # the short reason and its incident, as JSON-RPC's
            raise MCPError(types.INTERNAL_ERROR, str(exc), {"incident": exc.incident}) from exc

    async def meta_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> CallAnswer:
        state = _state(ctx)
        started = time.perf_counter()
        if params.name == "open_toolbox":
            declared = declared_capabilities(ctx, questions)
            opened = await metatools.open_toolbox(state.caller, params.arguments, declared)
            recorder.open_toolbox(state.caller, params.arguments, opened, started)
            assert opened.result is not None
            return opened.result
        if params.name == "search_tools":
            found = await metatools.search_tools(state.caller, params.arguments)
            recorder.search_tools(state.caller, params.arguments, found, started)
            assert found.result is not None
            return found.result
        if params.name == "use_tool":
            call = ToolCall.of(state.caller, params.arguments)
            call.meta, call.on_log, call.task = ctx.meta, log_forwarder(ctx), params.task
            relay_input(ctx, params, call, questions)
            outcome: Outcome | None = None
            try:
                with in_flight.track(state.owner, ctx.request_id):
                    outcome = await metatools.use_tool(call, progress_forwarder(ctx))
            finally:  # a cancelled call is recorded too (its result None)
                done = outcome or call.outcome(None)
                recorder.use_tool(state.caller, params.arguments, done, started)
            if outcome is None:  # cancelled by the client: nobody waits for this answer
                return error_result(errors.cancelled())
            assert outcome.result is not None
            if state.url_elicitation and outcome.error_code in errors.ELICITED_URLS:
                assert isinstance(outcome.result, types.CallToolResult)
                raise url_elicitation(outcome.result)
            return outcome.result
        return error_result(
            GatewayError(
                ErrorCode.INVALID_PARAMETERS,
                f"Unknown tool: '{params.name}'. This server offers {META_TOOL_NAMES}.",
            )
        )

    async def per_caller_instructions(
        ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            result = {**result, "instructions": instructions.render(_state(ctx).caller)}
        return result

    server: Server[Any] = Server(
        "workbench",
        version=__version__,
        title="Workbench MCP gateway",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        cache_hints=META_TOOL_HINTS,
    )
    # Replaces the SDK's default middleware: the SDK's own OpenTelemetry middleware comes
    # back only when spans are exported (the recorder's `tracing`).
    server.middleware = [
        *request_middlewares(recorder.client_names, recorder.tracing),
        per_caller_instructions,
    ]
    return server
