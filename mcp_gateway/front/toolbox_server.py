"""One toolbox as an MCP server of its own: `/mcp/t/<tenant-slug>/toolboxes/<toolbox>`.

The same door as `/mcp/t/<tenant-slug>` (`http`: credentials, the tenant's path, the one
404 for a toolbox the credential may not open), served statelessly by an SDK `Server` of
its own: the toolbox's tools named `<server>__<tool>`, each call a `use_tool` of that tool
(`metatools.use_tool.ToolUser`: the same checks, limits, accounts, texts, call log), its
servers' resources, templates, prompts and completions joined and routed back
(`metatools.toolbox_members`), and instructions made of the toolbox's description and its
servers' own.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_gateway import __version__
from mcp_gateway.downstream.connection import CallAnswer
from mcp_gateway.front.asgi import REFUSED
from mcp_gateway.front.cache_hints import TOOLBOX_HINTS
from mcp_gateway.front.cancellation import InFlightCalls
from mcp_gateway.front.endpoints import TENANT_PREFIX, TOOLBOXES
from mcp_gateway.front.questions import Questions
from mcp_gateway.front.request_naming import request_middlewares
from mcp_gateway.front.request_state import RequestState
from mcp_gateway.front.server import (
    declared_capabilities,
    log_forwarder,
    progress_forwarder,
    relay_input,
    url_elicitation,
)
from mcp_gateway.front.toolbox_changes import ToolboxChanges, honest
from mcp_gateway.metatools import errors
from mcp_gateway.metatools.errors import GatewayError
from mcp_gateway.metatools.member_requests import (
    CANCELLED,
    PROMPT_ANSWER,
    READ_ANSWER,
    PromptAnswer,
    ReadAnswer,
    Relay,
    sent_on,
)
from mcp_gateway.metatools.parts import MetaToolParts
from mcp_gateway.metatools.toolbox_links import ResultLinks
from mcp_gateway.metatools.toolbox_members import (
    ImplicitlyOpen,
    Member,
    ToolboxMembers,
    prefixed,
    tool_not_found,
)
from mcp_gateway.metatools.tools import error_result, failed
from mcp_gateway.metatools.use_tool import ToolCall, ToolUser
from mcp_gateway.observe.outcome import Named, Outcome
from mcp_gateway.observe.recorder import Recorder
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ToolboxConfig
from mcp_gateway.store.failure import StoreUnavailable

RESOURCE_NOT_FOUND = "Resource not found"
RESOURCE_NOT_FOUND_2025 = -32002  # the 2025-11-25 schema's code (mcp_types has it no more)
PROMPT_NOT_FOUND = "Prompt not found"


ParamsT = TypeVar("ParamsT")
AnswerT = TypeVar("AnswerT")
Handler = Callable[[ServerRequestContext[Any, Any], ParamsT], Awaitable[AnswerT]]


@dataclass(frozen=True, slots=True)
class ToolboxPath:
    slug: str
    toolbox: str


def toolbox_path(path: str) -> ToolboxPath | None:
    """`/mcp/t/<slug>/toolboxes/<toolbox>` (a trailing slash allowed), else None. A path
    of that form naming nothing well (empty, more segments) is one with an empty name."""
    if not path.startswith(TENANT_PREFIX):
        return None
    rest = path[len(TENANT_PREFIX) :]
    slug, found, toolbox = rest.partition(TOOLBOXES)
    if not found or not slug or "/" in slug:
        return None
    toolbox = toolbox[:-1] if toolbox.endswith("/") else toolbox
    return ToolboxPath(slug, "" if "/" in toolbox else toolbox)  # ASGI paths are decoded


def may_open(caller: Caller, path: ToolboxPath) -> bool:
    """Whether this credential may open the path's toolbox: its tenant's, one that exists,
    one its admin offers this way, one the credential may use (else the one 404 of
    `/mcp/t/<slug>`)."""
    toolbox = caller.tenant.toolbox(path.toolbox) if path.slug == caller.tenant.slug else None
    return toolbox is not None and toolbox.offered_alone and caller.key.allows(path.toolbox)


def resource_not_found_code(protocol_version: str) -> int:
    """The protocol's resource-not-found error: -32002 up to 2025-11-25; from 2026-07-28,
    which retired that code, invalid params (as the SDK's own servers answer)."""
    if protocol_version in MODERN_PROTOCOL_VERSIONS:
        return types.INVALID_PARAMS
    return RESOURCE_NOT_FOUND_2025


def _state(ctx: ServerRequestContext[Any, Any]) -> RequestState:
    assert ctx.request is not None
    state = RequestState.of(ctx.request.scope)  # set by front.http for every request
    assert state is not None
    return state


def _toolbox(ctx: ServerRequestContext[Any, Any]) -> tuple[Caller, ToolboxConfig]:
    assert ctx.request is not None
    caller = _state(ctx).caller
    path = toolbox_path(ctx.request.scope.get("path", ""))
    toolbox = caller.tenant.toolbox(path.toolbox) if path is not None else None
    if (  # checked by http already
        toolbox is None or not toolbox.offered_alone or not caller.key.allows(toolbox.name)
    ):
        raise MCPError(types.INVALID_REQUEST, "There is no toolbox at this path.")
    return caller, toolbox


def instructions_of(toolbox: ToolboxConfig, members: list[Member]) -> str:
    """The toolbox's description, then each server's own instructions under its name."""
    parts = [toolbox.description.strip() or f"The toolbox '{toolbox.name}'."]
    for member in members:
        text = member.conn.instructions if member.conn is not None else None
        if text and text.strip():
            parts.append(f"## {member.server.name}\n\n{text.strip()}")
    return "\n\n".join(parts)


def declared(capabilities: dict[str, Any], members: list[Member]) -> dict[str, Any]:
    """The endpoint's capabilities: resources, prompts and completions only where one of
    the toolbox's servers declares them."""
    kept = dict(capabilities)
    for capability in ("resources", "prompts", "completions"):
        if not any(member.declares(capability) for member in members):
            kept.pop(capability, None)
    return kept


def build_toolbox_server(
    parts: MetaToolParts,
    recorder: Recorder,
    in_flight: InFlightCalls,
    questions: Questions | None = None,
) -> Server[Any]:
    members = ToolboxMembers(parts)
    opened = parts.open_toolboxes  # where the links a result handed a caller are kept too
    links = ResultLinks(opened.store, opened.prefix, opened.idle_seconds)
    user = ToolUser(replace(parts, open_toolboxes=ImplicitlyOpen()))

    async def reach(
        caller: Caller, toolbox: ToolboxConfig, declared: Mapping[str, Any] | None = None
    ) -> list[Member]:
        """The toolbox's servers, on the connections a client that declared `declared`
        is served by; an open refused by its rate limit as a JSON-RPC error (a list has no
        tool result to carry it), with the contract's text and code."""
        try:
            return await members.connect(caller, toolbox, declared)
        except GatewayError as error:
            data = {"code": error.code.value, **error.details}
            raise MCPError(REFUSED, error.message, data) from None

    def client_set(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | None:
        """The calling client's relayed capabilities (`server.declared_capabilities`): the
        members a request of its reaches are on the connections for that set."""
        return declared_capabilities(ctx, questions)

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller, toolbox = _toolbox(ctx)
        reached = await reach(caller, toolbox, client_set(ctx))
        listed = members.tools(reached, caller, toolbox.name)  # policies
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> CallAnswer:
        try:
            return await use_tool(ctx, params)
        except StoreUnavailable as exc:  # as the main endpoint's: JSON-RPC's, with incident
            raise MCPError(types.INTERNAL_ERROR, str(exc), {"incident": exc.incident}) from exc

    async def use_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> CallAnswer:
        state = _state(ctx)
        caller, toolbox = _toolbox(ctx)
        started = time.perf_counter()
        refusal: GatewayError | None = None
        try:
            ref = await members.tool_ref(caller, toolbox, params.name, client_set(ctx))
        except GatewayError as error:  # an open its rate limit refused (a shared name)
            ref, refusal = None, error
        # As use_tool's arguments would name it: what the call log keeps.
        arguments: dict[str, Any] = {
            "tool": {
                "toolbox": toolbox.name,
                "server": ref[0] if ref else "",
                "name": ref[1] if ref else params.name,
            },
            "arguments": params.arguments or {},
        }
        if ref is None:
            refusal = refusal or tool_not_found(params.name, toolbox.name)
            refused = failed(refusal, Named(toolbox.name, "", params.name), toolbox)
            recorder.use_tool(caller, arguments, refused, started)
            assert refused.result is not None
            return refused.result
        call = ToolCall.of(caller, arguments)
        call.meta, call.on_log, call.task = ctx.meta, log_forwarder(ctx), params.task
        relay_input(ctx, params, call, questions)
        outcome: Outcome | None = None
        try:
            with in_flight.track(state.owner, ctx.request_id):
                outcome = await user(call, progress_forwarder(ctx))
        finally:  # a cancelled call is recorded too (its result None)
            done = outcome or call.outcome(None)
            recorder.use_tool(caller, arguments, done, started)
        if outcome is None:
            return error_result(errors.cancelled())
        assert outcome.result is not None
        if not isinstance(outcome.result, types.CallToolResult):
            return outcome.result  # the server asks the client for input first
        if outcome.server is not None and not outcome.error_code:
            await links.remember(caller.owner, toolbox.name, outcome.server.name, outcome.result)
        if state.url_elicitation and outcome.error_code in errors.ELICITED_URLS:
            raise url_elicitation(outcome.result)
        return outcome.result

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        caller, toolbox = _toolbox(ctx)
        found = await members.resources(await reach(caller, toolbox, client_set(ctx)))
        return types.ListResourcesResult(resources=found)

    async def list_resource_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        caller, toolbox = _toolbox(ctx)
        found = await members.templates(await reach(caller, toolbox, client_set(ctx)))
        return types.ListResourceTemplatesResult(resource_templates=found)

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> ReadAnswer:
        caller, toolbox = _toolbox(ctx)
        uri = str(params.uri)
        linked = await links.server_of(caller.owner, toolbox.name, uri)
        owner = await members.owner_of(await reach(caller, toolbox, client_set(ctx)), uri, linked)
        if owner is None or owner.conn is None:
            raise MCPError(
                resource_not_found_code(ctx.protocol_version),
                f"{RESOURCE_NOT_FOUND}: {uri}",
                {"uri": uri},
            )
        request = types.ReadResourceRequest(params=params)
        return await relayed(
            ctx, owner, request, READ_ANSWER, bound_to=f"{request.method} {uri}", params=params
        )

    async def list_prompts(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        caller, toolbox = _toolbox(ctx)
        found = await members.prompts(await reach(caller, toolbox, client_set(ctx)))
        return types.ListPromptsResult(prompts=[prompt for _, prompt in found])

    async def get_prompt(
        ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> PromptAnswer:
        caller, toolbox = _toolbox(ctx)
        owner = await members.prompt_owner(
            await reach(caller, toolbox, client_set(ctx)), params.name
        )
        if owner is None or owner[0].conn is None:
            raise MCPError(
                types.INVALID_PARAMS, f"{PROMPT_NOT_FOUND}: {params.name}", {"name": params.name}
            )
        request = types.GetPromptRequest(params=params.model_copy(update={"name": owner[1]}))
        return await relayed(
            ctx,
            owner[0],
            request,
            PROMPT_ANSWER,
            name=owner[1],
            bound_to=f"{request.method} {owner[1]}",
            params=params,
        )

    async def complete(
        ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        caller, toolbox = _toolbox(ctx)
        reached = await reach(caller, toolbox, client_set(ctx))
        ref = params.ref
        owner: Member | None = None
        if isinstance(ref, types.PromptReference):
            found = await members.prompt_owner(reached, ref.name)
            if found is not None:
                owner, own = found
                ref = ref.model_copy(update={"name": own})
        else:
            await members.listed(reached)
            owner = members.template_owner(reached, ref.uri)
        if owner is None or owner.conn is None or not owner.declares("completions"):
            return types.CompleteResult(completion=types.Completion(values=[]))
        request = types.CompleteRequest(params=params.model_copy(update={"ref": ref}))
        return await relayed(ctx, owner, request, types.CompleteResult, params=params)

    async def relayed(
        ctx: ServerRequestContext[Any, Any],
        owner: Member,
        request: types.ReadResourceRequest | types.GetPromptRequest | types.CompleteRequest,
        answer: Any,
        *,
        params: types.RequestParams,
        name: str = "",
        bound_to: str = "",
    ) -> Any:
        """`request` sent on to the member that owns what it names, with what a tool call
        passes through besides its result, built as the tools/call path builds it: the
        request's `_meta`, progress, log messages, the client's declared capabilities and
        how it is asked a server's question (`relay_input`), cancellation. The member was
        reached on the connection for the client's declared set (`client_set`)."""
        conn = owner.conn
        assert conn is not None
        caller, toolbox = _toolbox(ctx)
        relay = Relay(caller.owner, toolbox.name, ctx.meta, progress_forwarder(ctx))
        relay.on_log = log_forwarder(ctx)
        relay_input(ctx, params, relay, questions)
        server = owner.server.name
        return await sent_on(conn, server, request, answer, relay, name=name, bound_to=bound_to)

    def cancellable(handler: Handler[ParamsT, AnswerT]) -> Handler[ParamsT, AnswerT]:
        """`handler` as a 2025-11-25 client's `notifications/cancelled` may end it, from
        its start (`http` applies those), as a tool call is; nobody waits for its answer
        then."""

        async def handle(ctx: ServerRequestContext[Any, Any], params: ParamsT) -> AnswerT:
            with in_flight.track(_state(ctx).owner, ctx.request_id):
                return await handler(ctx, params)
            raise MCPError(types.INTERNAL_ERROR, CANCELLED)

        return handle

    async def toolbox_instructions(
        ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            caller, toolbox = _toolbox(ctx)
            capabilities = result.get("capabilities", {})
            try:
                reached = await members.connect(caller, toolbox)
            except GatewayError:  # its servers not started now: the toolbox's own words
                reached = None
            result = {
                **result,
                "instructions": instructions_of(toolbox, reached or []),
                "capabilities": honest(
                    capabilities if reached is None else declared(capabilities, reached)
                ),
            }
        return result

    def input_schema(name: str) -> Mapping[str, Any] | None:
        """A tool's `inputSchema` for the SDK's check of a 2026-07-28 call's `Mcp-Param-*`
        headers, made before the call is dispatched and naming only the tool: read from the
        live connections of the toolbox the request is for (`SERVING`), never by listing
        the toolbox, which would start every one of its servers before each call. None (a
        server not started, a name not listed): the check is skipped, as the SDK skips it
        when a listing fails; the call itself then goes through every rule of `use_tool`."""
        serving = SERVING.get()
        if serving is None:
            return None
        caller, toolbox_name = serving
        toolbox = caller.tenant.toolbox(toolbox_name)
        if toolbox is None:
            return None
        for member in members.live(caller, toolbox):
            for tool in members.offered(member):
                if prefixed(member.server.name, tool.name) == name:
                    return tool.input_schema
        return None

    server: Server[Any] = Server(
        "workbench-toolbox",
        version=__version__,
        title="Workbench toolbox",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=cancellable(read_resource),
        on_list_prompts=list_prompts,
        on_get_prompt=cancellable(get_prompt),
        on_completion=cancellable(complete),
        on_subscriptions_listen=ToolboxChanges(members, reach, _toolbox),
        cache_hints=TOOLBOX_HINTS,
        get_tool_input_schema=input_schema,
    )
    server.middleware = [
        *request_middlewares(recorder.client_names, recorder.tracing),
        toolbox_instructions,
    ]
    return server


# The toolbox endpoint's request being served: its caller and toolbox (`front.http` sets
# it around the SDK's handling), for what the SDK asks before dispatching a request, with
# nothing of the request to go by (`input_schema`).
SERVING: ContextVar[tuple[Caller, str] | None] = ContextVar("workbench_toolbox", default=None)


@dataclass(frozen=True, slots=True)
class ToolboxEndpoint:
    """The toolbox endpoint's SDK server and its two ways to answer a POST, as the main
    endpoint's (`assembly.GatewayParts`): SSE (`server.session_manager`) and one JSON body."""

    server: Server[Any]
    json_answers: StreamableHTTPSessionManager
    changes: ToolboxChanges  # its streams' watching (`Gateway.end_streams` ends them)


def build_toolbox_endpoint(
    parts: MetaToolParts,
    recorder: Recorder,
    in_flight: InFlightCalls,
    security: TransportSecuritySettings,
    max_request_bytes: int,
    questions: Questions | None = None,
) -> ToolboxEndpoint:
    server = build_toolbox_server(parts, recorder, in_flight, questions)
    server.streamable_http_app(
        stateless_http=True,
        transport_security=security,
        max_request_body_size=max_request_bytes,
    )
    json_answers = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        stateless=True,
        security_settings=security,
        max_request_body_size=max_request_bytes,
    )
    listen = server.get_request_handler("subscriptions/listen")
    assert listen is not None and isinstance(listen.handler, ToolboxChanges)
    return ToolboxEndpoint(server, json_answers, listen.handler)
