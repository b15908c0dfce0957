"""`use_tool`: the contract's checks, in its order, then one call on the pool's connection
to the server, its result passed on unchanged (but for the credentials the secrets guard
removes, where the tenant switched it on)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from kernel.redaction import Redactor
from mcp_gateway.downstream.connection import CallAnswer, Connection, LogForward
from mcp_gateway.downstream.failures import DownstreamFailure
from mcp_gateway.downstream.pool import ConnectFailed
from mcp_gateway.downstream.server_questions import AskClient
from mcp_gateway.metatools import errors, input_state, policy, secret_guard
from mcp_gateway.metatools.approvals import pass_held
from mcp_gateway.metatools.asked_rounds import TooManyRounds, asked_until_answered
from mcp_gateway.metatools.connect import (
    SignInRequired,
    connection,
    refused,
    sign_in_required,
)
from mcp_gateway.metatools.errors import ErrorCode, GatewayError
from mcp_gateway.metatools.held_calls import HELD_PREFIX, KEY, HeldCall, answer_of
from mcp_gateway.metatools.lone_calls import LoneCalls
from mcp_gateway.metatools.parts import MetaToolParts
from mcp_gateway.metatools.schemas import UseToolArgs, named_tool, parse_use_args
from mcp_gateway.metatools.tools import failed
from mcp_gateway.metatools.url_questions import QUESTION, as_question, declares_url
from mcp_gateway.observe.outcome import Named, Outcome
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ServerConfig, ToolboxConfig


@dataclass(slots=True)
class ToolCall:
    """One use_tool, from its arguments to its outcome: what it names, and what the
    configuration knows of those names (looked up once)."""

    caller: Caller
    arguments: dict[str, Any] | None
    named: Named
    toolbox: ToolboxConfig | None
    server: ServerConfig | None
    redactors: tuple[Redactor, ...] = ()  # the serving connection's, once it has one
    decision: str = ""  # what a tool policy's rule or default decided (the call log's)
    secrets_removed: tuple[tuple[str, int], ...] = ()  # the secrets guard's kinds and counts
    # The client's request `_meta` (what of it the server gets: `connection.passed_on_meta`)
    # and where the server's log messages during the call go (None: only the gateway's log).
    meta: Mapping[str, Any] | None = None
    on_log: LogForward | None = None
    # Input a server may ask the client for (2026-07-28's input-required results): what
    # the client declared that the server is told (`downstream.envelope.relayed`), and a
    # retry's answers and the gateway's sealed state (`input_state`).
    capabilities: Mapping[str, Any] | None = None
    input_responses: types.InputResponses | None = None
    request_state: str | None = None
    # The client's `task` (2025-11-25's task-augmented call), passed on as it came: the
    # gateway relays no `tasks/*` (README, "Tasks").
    task: types.TaskMetadata | None = None
    # A 2025-11-25 client that declared them is asked the server's questions during the
    # call (`front.questions`), and the server gets its answers: no input-required result.
    ask: AskClient | None = None
    # A 2026-07-28 client: asked by input-required results (a server spoken to in
    # 2025-11-25 that asks it has its call held for the retry: `held_calls`).
    input_required: bool = False
    url_asked: bool = False  # a retry after the gateway's own URL question (`url_questions`)
    # The arguments as checked, once (`parse_use_args`): each downstream request reads them.
    parsed: UseToolArgs | None = None

    @classmethod
    def of(cls, caller: Caller, arguments: dict[str, Any] | None) -> ToolCall:
        named = named_tool(arguments)
        toolbox = caller.tenant.toolbox(named.toolbox) if named.toolbox else None
        server = toolbox.server(named.server) if toolbox is not None and named.server else None
        return cls(caller, arguments, named, toolbox, server)

    def outcome(self, result: CallAnswer | None) -> Outcome:
        """`result` None: the client cancelled the call."""
        return Outcome(
            result,
            self.named,
            self.toolbox,
            self.server,
            redactors=self.redactors,
            decision=self.decision,
            secrets_removed=self.secrets_removed,
        )


@dataclass(frozen=True, slots=True)
class HeldQuestion:
    """A held call's question for its client (`held_calls`), its state sealed already."""

    result: types.InputRequiredResult


def _connect_failed(
    exc: ConnectFailed, tool: str, server: ServerConfig, toolbox: ToolboxConfig
) -> GatewayError:
    """A connect that failed, the pool's or a call's own: the contract's CONNECTION_FAILED."""
    return errors.downstream_failed(
        ErrorCode.CONNECTION_FAILED,
        tool,
        server.name,
        toolbox.name,
        exc.reason,
        exc.incident,
    )


NO_RETRY: tuple[None, None, None] = (None, None, None)  # no progress, answers nor state


class ToolUser:
    def __init__(self, parts: MetaToolParts) -> None:
        self.pool = parts.pool
        self.open_toolboxes = parts.open_toolboxes
        self.limiter = parts.limiter
        self.accounts = parts.accounts
        self.approvals = parts.approvals
        self.held = parts.held_calls
        self.lone = LoneCalls(parts.pool)

    async def __call__(
        self, call: ToolCall, progress_callback: ProgressFnT | None = None
    ) -> Outcome:
        try:
            result = await self._call(call, progress_callback)
        except GatewayError as error:
            # A call that failed once allowed (or approved) still says who allowed it.
            error.decision = error.decision or call.decision
            asked = self._url_question(call, error)
            if asked is not None:
                outcome = failed(error, call.named, call.toolbox, call.server, call.redactors)
                return replace(outcome, result=asked)
            return failed(error, call.named, call.toolbox, call.server, call.redactors)
        return call.outcome(result)

    @staticmethod
    def _url_question(call: ToolCall, error: GatewayError) -> types.InputRequiredResult | None:
        """A sign-in or an approval as a 2026-07-28 client's URL elicitation, once per call
        (`url_questions`), where the client declared it."""
        if not call.input_required or call.url_asked or not declares_url(call.capabilities):
            return None
        named = call.named
        bound = input_state.Bound(call.caller.owner, named.toolbox, named.server, named.tool)
        return as_question(error, bound)

    async def _call(self, call: ToolCall, progress_callback: ProgressFnT | None) -> CallAnswer:
        caller = call.caller
        args = call.parsed = parse_use_args(call.arguments)
        ref = args.tool
        toolbox, server = call.toolbox, call.server
        if toolbox is not None and not caller.key.allows(ref.toolbox):
            raise errors.forbidden(ref.toolbox, caller.visible_toolboxes())
        if toolbox is None or not await self.open_toolboxes.is_open(caller.owner, ref.toolbox):
            raise errors.toolbox_not_open(ref.toolbox)
        if server is None:
            raise errors.server_not_found(ref.server, toolbox.name)
        if not server.allows(ref.name):  # filtered out: no need to connect to say so
            raise errors.tool_filtered(ref.name, server.name, toolbox.name)
        decided = policy.decision(caller, toolbox.name, server.name, ref.name)
        if decided is not None and not decided.allowed:
            raise errors.tool_forbidden(ref.name, server.name, toolbox.name, decided.reason)
        call.decision = decided.reason if decided is not None and decided.rule else ""
        bound = input_state.Bound(caller.owner, toolbox.name, server.name, ref.name)
        opened = input_state.Opened(None)
        if call.request_state is not None:  # a retry: the state must be this caller's
            try:
                opened = input_state.unseal(bound, call.request_state)
            except input_state.StateRefused:
                raise errors.state_refused(ref.name, server.name, toolbox.name) from None
            if opened.server_state == QUESTION:  # the answer to the gateway's own link
                opened, call.input_responses, call.url_asked = (
                    replace(opened, server_state=None),
                    None,
                    True,
                )
        # Before any connection is made.
        wait = await self.limiter.wait_for(
            caller.tenant.tenant_id, caller.key.key_id, caller.key.limits
        )
        if wait:
            raise errors.rate_limited(ref.name, server.name, toolbox.name, wait)
        try:
            conn = await connection(
                self.pool, caller, toolbox, server, self.accounts, call.capabilities
            )
        except SignInRequired as exc:
            raise errors.auth_required(ref.name, server.name, toolbox.name, exc.url) from None
        except ConnectFailed as exc:
            raise _connect_failed(exc, ref.name, server, toolbox) from None
        call.redactors = (conn.redact,)
        if not conn.has_tool(ref.name):
            raise errors.tool_not_found(ref.name, server.name, toolbox.name)
        if server.pins.held_digest(ref.name, conn.digests[ref.name], server.fingerprint):
            raise errors.tool_not_approved(ref.name, server.name, toolbox.name)
        if policy.needs_annotations(caller):  # the tenant's defaults read what the server says
            offered = next((tool for tool in conn.tools if tool.name == ref.name), None)
            decided = policy.with_annotations(
                caller, toolbox.name, server.name, offered, ref.name, decided
            )
            if decided is not None and not decided.allowed:
                raise errors.tool_forbidden(ref.name, server.name, toolbox.name, decided.reason)
        approved = ""  # the approved run, which one retry of its input-required result continues
        if decided is not None and decided.ask:  # last: an approval is used only to run
            where = (toolbox.name, server.name, ref.name)
            call.decision, approved = await pass_held(
                self.approvals,
                caller,
                where,
                args.arguments,
                decided,
                call.redactors,
                retry=opened.approved,
            )
        held_state = opened.server_state or ""
        result: CallAnswer | HeldQuestion
        if held_state.startswith(HELD_PREFIX):  # a retry: its held call gets the answer
            taken = self.held.take(held_state, bound)
            if taken is None:
                raise errors.held_elsewhere(ref.name, server.name, toolbox.name)
            held, reply = taken
            HeldCall.answer(reply, answer_of(call.input_responses))
            result = await self._held_step(held, bound, approved)
        elif call.input_required and call.capabilities and not conn.modern:
            held = self.held.call(conn.ref)  # the server may ask: held for the retry
            call.ask = held.ask
            if self.lone.needed(conn, server, can_ask=True):  # its question: this call's alone
                held.start(self._alone(call, lambda own: self._downstream(call, own, *NO_RETRY)))
            else:
                held.start(self._downstream(call, conn, *NO_RETRY))
            result = await self._held_step(held, bound, approved)
        else:
            retry = (progress_callback, call.input_responses, opened.server_state)
            if self.lone.needed(conn, server, can_ask=call.ask is not None):
                result = await self._alone(call, lambda own: self._downstream(call, own, *retry))
            else:
                result = await self._downstream(call, conn, *retry)
            if isinstance(result, types.InputRequiredResult) and call.ask is not None:
                result = await self._asked(call, conn, progress_callback, result)
        if isinstance(result, HeldQuestion):  # sealed already
            return result.result
        if isinstance(result, types.InputRequiredResult):  # the client answers, then retries
            return types.InputRequiredResult(
                input_requests=result.input_requests,
                request_state=input_state.seal(bound, result.request_state, approved=approved),
            )
        answer: types.CallToolResult = result
        if caller.tenant.guard_secrets:  # before anything else sees the result
            if secret_guard.text_length(answer) > secret_guard.IN_THREAD_CHARS:
                answer, found = await anyio.to_thread.run_sync(
                    secret_guard.guard, answer, call.redactors
                )
            else:
                answer, found = secret_guard.guard(answer, call.redactors)
            call.secrets_removed = found.counts
        return answer

    async def _held_step(
        self, held: HeldCall, bound: input_state.Bound, approved: str
    ) -> CallAnswer | HeldQuestion:
        """What the held call comes to next: the server's question, as an input-required
        result whose sealed state names the held call, or its end."""
        step, reply = await held.next()
        if reply is not None:
            state = self.held.keep(held, reply, bound)
            asked = types.InputRequiredResult(
                input_requests={KEY: step},
                request_state=input_state.seal(bound, state, approved=approved),
            )
            return HeldQuestion(asked)
        if isinstance(step, BaseException):
            raise step
        assert isinstance(step, types.CallToolResult | types.InputRequiredResult), step
        return step

    async def _alone(
        self, call: ToolCall, use: Callable[[Connection], Awaitable[CallAnswer]]
    ) -> CallAnswer:
        """`use` on a connection of the call's own (`lone_calls`); its connect failure as
        the contract's CONNECTION_FAILED."""
        assert call.server is not None and call.toolbox is not None
        server, toolbox, name = call.server, call.toolbox, call.named.tool
        try:
            return await self.lone.run(call.caller, toolbox, server, use, call.capabilities)
        except ConnectFailed as exc:
            raise _connect_failed(exc, name, server, toolbox) from None

    async def _downstream(
        self,
        call: ToolCall,
        conn: Connection,
        progress_callback: ProgressFnT | None,
        input_responses: types.InputResponses | None,
        server_state: str | None,
    ) -> CallAnswer:
        """One tools/call to the server; its failures as the contract's errors."""
        assert call.server is not None and call.toolbox is not None
        server, toolbox = call.server, call.toolbox
        args = call.parsed or parse_use_args(call.arguments)
        ref = args.tool
        try:
            return await conn.call_tool(
                ref.name,
                args.arguments,
                progress_callback=progress_callback,
                meta=call.meta,
                on_log=call.on_log,
                capabilities=call.capabilities,
                input_responses=input_responses,
                request_state=server_state,
                task=call.task,
                ask=call.ask,
            )
        except DownstreamFailure as exc:
            if refused(conn) and self.accounts is not None:  # no retry: the person signs in
                conn.stop()
                failure = await sign_in_required(self.accounts, call.caller, server)
                if isinstance(failure, SignInRequired):
                    raise errors.auth_required(
                        ref.name, server.name, toolbox.name, failure.url
                    ) from None
            code = ErrorCode.TIMEOUT if exc.timed_out else ErrorCode.DOWNSTREAM_ERROR
            own = (exc.error.code, exc.error.data) if exc.error is not None else None
            raise errors.downstream_failed(
                code, ref.name, server.name, toolbox.name, exc.reason, exc.incident, own
            ) from None

    async def _asked(
        self,
        call: ToolCall,
        conn: Connection,
        progress_callback: ProgressFnT | None,
        first: types.InputRequiredResult,
    ) -> CallAnswer:
        """The server's questions asked of the client during the call until it answers
        (`asked_rounds`). The client's error ends the call as the server's own error would
        (`DOWNSTREAM_ERROR`, its message, code and data)."""
        assert call.ask is not None and call.server is not None and call.toolbox is not None

        async def retry(responses: types.InputResponses | None, state: str | None) -> CallAnswer:
            return await self._downstream(call, conn, progress_callback, responses, state)

        name = (call.parsed or parse_use_args(call.arguments)).tool.name
        server, toolbox = call.server.name, call.toolbox.name
        try:
            return await asked_until_answered(call.ask, first, retry)
        except MCPError as exc:
            raise errors.downstream_failed(
                ErrorCode.DOWNSTREAM_ERROR,
                name,
                server,
                toolbox,
                exc.error.message,
                None,
                (exc.error.code, exc.error.data),
            ) from None
        except TooManyRounds as exc:
            raise errors.downstream_failed(
                ErrorCode.DOWNSTREAM_ERROR, name, server, toolbox, exc.text("call")
            ) from None
