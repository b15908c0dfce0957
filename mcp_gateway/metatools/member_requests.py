"""A toolbox endpoint's request other than tools/call (`resources/read`, `prompts/get`,
`completion/complete`), sent on to the server of the toolbox that owns what it names, with
what passes through besides the result, as on a tool call: the request's `_meta`,
progress, log messages, cancellation, the calling client's declared capabilities, and a
server's question for input.

A server's question reaches the client as on a tool call (`use_tool`): a 2026-07-28
client gets the server's input-required result (`resources/read` and `prompts/get` may
answer with one) with the gateway's sealed state (`input_state`, bound to the caller, the
server and what the request names), and its retry gives the server its answers and its
own state; a 2025-11-25 client that declared the capability is asked during the request
on its stream (a server spoken to in 2026-07-28 is called again with the answers; one
spoken to in 2025-11-25 asks by a request, answered when this request is the only one in
flight on its connection: `server_questions`). Not relayed: a 2025-11-25 server's
question to a 2026-07-28 client (a tool call holds its call for the retry,
`held_calls`; a request here does not), which the server gets the answer a client that
declared nothing gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from mcp_gateway.downstream.connection import Connection, LogForward
from mcp_gateway.downstream.server_questions import AskClient
from mcp_gateway.metatools import input_state
from mcp_gateway.metatools.asked_rounds import TooManyRounds, asked_until_answered
from mcp_gateway.metatools.toolbox_members import forwarded

STATE_REFUSED = (
    "The request state is not valid for this request (altered, expired, or issued to "
    "another caller or request); send the request again without it"
)
CANCELLED = "cancelled by the client"

ReadAnswer = types.ReadResourceResult | types.InputRequiredResult
PromptAnswer = types.GetPromptResult | types.InputRequiredResult
READ_ANSWER: TypeAdapter[ReadAnswer] = TypeAdapter(ReadAnswer)
PROMPT_ANSWER: TypeAdapter[PromptAnswer] = TypeAdapter(PromptAnswer)


@dataclass(slots=True)
class Relay:
    """What one request passes through besides its result, built as a tool call's is
    (`front.server`: `relay_input`, `progress_forwarder`, `log_forwarder`); the fields
    are `use_tool.ToolCall`'s of the same names."""

    owner: str  # the caller's credential (`Caller.owner`): whose a sealed state is
    toolbox: str
    meta: Mapping[str, Any] | None = None
    progress: ProgressFnT | None = None
    on_log: LogForward | None = None
    capabilities: Mapping[str, Any] | None = None
    ask: AskClient | None = None
    input_required: bool = False
    input_responses: types.InputResponses | None = None
    request_state: str | None = None


async def sent_on(
    conn: Connection,
    server: str,
    request: types.ReadResourceRequest | types.GetPromptRequest | types.CompleteRequest,
    answer: Any,
    relay: Relay,
    *,
    name: str = "",
    bound_to: str = "",
) -> Any:
    """`request` to the member `server` on `conn`, relayed; `answer` its result type (an
    input-required result allowed or not); `name` what the request names, for its span
    (a prompt's own name); `bound_to` what a sealed state is bound to besides the caller
    and the server (the method and the URI or prompt name)."""
    bound = input_state.Bound(relay.owner, relay.toolbox, server, bound_to or request.method)
    server_state = None
    if relay.request_state is not None:
        try:
            server_state = input_state.unseal(bound, relay.request_state).server_state
        except input_state.StateRefused:
            raise MCPError(types.INVALID_PARAMS, STATE_REFUSED) from None

    async def send(responses: types.InputResponses | None, state: str | None) -> Any:
        params: Any = request.params
        if isinstance(params, types.InputResponseRequestParams):
            retry = {"input_responses": responses, "request_state": state}
            params = params.model_copy(update=retry)
        return await forwarded(
            conn,
            request.model_copy(update={"params": params}),
            answer,
            name=name,
            meta=relay.meta,
            progress_callback=relay.progress,
            on_log=relay.on_log,
            capabilities=relay.capabilities,
            ask=relay.ask,
        )

    result = await send(relay.input_responses, server_state)
    if not isinstance(result, types.InputRequiredResult):
        return result
    if relay.ask is not None:  # a 2025-11-25 client: asked now, on its request's stream
        return await _asked(relay.ask, result, send)
    if relay.input_required:  # a 2026-07-28 client: it answers, then retries
        return types.InputRequiredResult(
            input_requests=result.input_requests,
            request_state=input_state.seal(bound, result.request_state),
        )
    return result  # asked of a client that declared nothing: the server's own answer


async def _asked(ask: AskClient, first: types.InputRequiredResult, send: Any) -> Any:
    """The server's questions asked of the client until it answers (`asked_rounds`); the
    client's error is the request's error, as the server's own would be."""
    try:
        return await asked_until_answered(ask, first, send)
    except TooManyRounds as exc:
        raise MCPError(types.INTERNAL_ERROR, exc.text("request")) from None
