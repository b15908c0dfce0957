"""The ASGI app behind `/mcp`: authenticate, name the session, hand over to the SDK.

The SDK serves statelessly (any process answers any request). For clients of the
2025-11-25 revision the gateway still gives each `initialize` an `Mcp-Session-Id`, so
that what a session opens stays its own; the id names state in the shared store and
needs no process to remember it. The parts it serves with are made by `assembly`, at
the start of its lifespan, which runs them until the process stops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import Receive, Scope, Send

from mcp_gateway.assembly import GatewayParts, assemble
from mcp_gateway.database.records import record_store
from mcp_gateway.database.threads import release_database
from mcp_gateway.downstream.sandbox.uid_claims import claim_uid_base
from mcp_gateway.front.asgi import (
    SESSION_HEADER,
    answers_as_json,
    read_body,
    refusal,
    replay,
    until_disconnect,
    with_new_session_id,
)
from mcp_gateway.front.auth import (
    MULTIPLE_CREDENTIALS,
    MULTIPLE_CREDENTIALS_MESSAGE,
    AuthError,
    challenge,
    credential_headers,
    public_base,
    refused_key_prefix,
)
from mcp_gateway.front.endpoints import NOT_FOUND, NOT_FOUND_MESSAGE, tenant_of
from mcp_gateway.front.hostcheck import refuse
from mcp_gateway.front.questions import may_answer
from mcp_gateway.front.request_state import RequestState
from mcp_gateway.front.toolbox_server import SERVING, ToolboxEndpoint, may_open, toolbox_path
from mcp_gateway.front.toolbox_stream import serve_stream
from mcp_gateway.observe.logfilter import DropMessages
from mcp_gateway.options import GatewayOptions
from mcp_gateway.store.failure import RETRY_AFTER_SECONDS, StoreUnavailable
from mcp_gateway.store.shared import describe_store

logger = logging.getLogger("workbench.auth")

NO_STANDALONE_STREAM = (
    "This endpoint offers no server-to-client stream (GET): send requests by POST; "
    "answers and progress come on each POST's own response."
)
NO_SESSION_END = (
    "This endpoint does not end sessions (DELETE): what a session opened belongs to its "
    "API key, which other sessions may be using. Stop sending the session id instead."
)
ONLY_POST = [(b"allow", b"POST")]
PROTOCOL_HEADER = b"mcp-protocol-version"
TOO_MANY_IN_FLIGHT = (
    "This API key has {limit} requests in flight, its limit: retry when one has answered."
)
IN_FLIGHT_RETRY_SECONDS = 1
# The requests during which a server may ask the client for input (a toolbox endpoint's
# reads and prompts too: `metatools.member_requests`).
ASKING = (b"tools/call", b"resources/read", b"prompts/get")
# The requests whose answer depends on what the client declared: what a server offers
# such a client (a toolbox endpoint's lists) and the connection its request goes on
# (`metatools.connect`). What it declared is read for these too; they are answered as one
# JSON body when the client accepts one (no question can come during them).
DECLARED_FOR = (
    *ASKING,
    b"tools/list",
    b"resources/list",
    b"resources/templates/list",
    b"prompts/list",
    b"completion/complete",
)


class Gateway:
    """The /mcp app of one process: its lifespan (`running`) assembles the gateway's parts
    (`assembly.assemble`) and runs them; each request is served with those parts."""

    def __init__(self, options: GatewayOptions) -> None:
        self.options = options
        self._parts: GatewayParts | None = None  # while running

    @property
    def parts(self) -> GatewayParts:
        if self._parts is None:
            raise RuntimeError("the gateway is not running: enter `running()` first")
        return self._parts

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """Enter once, in the task that owns the ASGI lifespan."""
        try:
            parts = await assemble(self.options)
            try:
                await _announce_store(parts)
                async with (
                    _claimed_uid_base(parts),
                    parts.server.session_manager.run(),
                    _unannounced(parts.json_answers),
                    _toolbox_endpoint_running(parts),
                    parts.pool.running(),
                    parts.recorder.running(),
                    anyio.create_task_group() as background,
                ):
                    background.start_soon(parts.warm_up.run)
                    self._parts = parts
                    try:
                        yield self
                    finally:
                        self._parts = None
                        background.cancel_scope.cancel()
            finally:
                await parts.limiter.buckets.close()
                await parts.shared.close()
        finally:
            await release_database()

    def end_streams(self) -> None:
        """End the toolbox endpoint's streams (listen and GET) gracefully (a shutdown:
        uvicorn waits for every open response, and those never end by themselves). On the
        event loop."""
        endpoint = self._parts.toolbox_endpoint if self._parts is not None else None
        if endpoint is not None:
            endpoint.changes.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        parts = self.parts
        if credential_headers(scope["headers"]) > 1:
            parts.recorder.auth_refused(MULTIPLE_CREDENTIALS)
            logger.info("refused: %s", MULTIPLE_CREDENTIALS)
            await refusal(send, 400, MULTIPLE_CREDENTIALS, MULTIPLE_CREDENTIALS_MESSAGE)
            return
        headers = dict(scope["headers"])
        try:
            caller = await parts.auth.authenticate(headers)
        except AuthError as exc:
            parts.recorder.auth_refused(exc.reason)
            prefix = refused_key_prefix(headers)
            logger.info(
                "refused: %s (key prefix %s)", exc.reason, prefix, extra={"key_prefix": prefix}
            )
            challenged = [(b"www-authenticate", challenge(scope, exc, parts.host_check))]
            await refusal(send, 401, exc.reason, exc.message, challenged)
            return
        except StoreUnavailable as exc:
            await store_unavailable(send, exc)
            return
        slug = tenant_of(scope.get("path", ""))
        toolbox = toolbox_path(scope.get("path", ""))  # the toolbox endpoint's
        if toolbox is not None:  # one the credential may not open: the tenant's 404
            slug = toolbox.slug if may_open(caller, toolbox) else ""
        if slug is not None and slug != caller.tenant.slug:
            # Another tenant's slug and an unknown one answer alike: nothing says which.
            await refusal(send, 404, NOT_FOUND, NOT_FOUND_MESSAGE)
            return
        session_id = headers.get(SESSION_HEADER, b"").decode("latin-1") or None
        if scope["method"] == "DELETE":
            # What a session opened belongs to its key, and other sessions of that key may
            # be using it: there is nothing to end, and a session id keeps working. The
            # spec's answer for a server that does not let clients end sessions: 405 (a
            # 2xx would promise a 404 for the id from then on).
            await refusal(send, 405, "method_not_allowed", NO_SESSION_END, ONLY_POST)
            return
        streamed = toolbox is not None and parts.toolbox_endpoint is not None
        if scope["method"] == "GET" and (not streamed or modern(headers)):
            # The tenant's endpoint has nothing to send unasked (its meta-tools never
            # change), and 2026-07-28 has no such stream (its clients listen by POST):
            # holding one open would cost a stream per idle client. The spec's answer: 405.
            await refusal(send, 405, "method_not_allowed", NO_STANDALONE_STREAM, ONLY_POST)
            return
        bad_host = parts.host_check.refusal(scope, headers)
        if bad_host is not None:
            await refuse(send, *bad_host)
            return
        caller = replace(caller, base_url=public_base(scope, parts.host_check))
        state = RequestState(caller, session_id)
        state.put(scope)
        if scope["method"] == "GET":
            # A 2025-11-25 client's stream for what a server sends unasked: the toolbox's
            # list_changed. Not a request in flight: it lasts as long as the client.
            assert toolbox is not None and parts.toolbox_endpoint is not None
            found = caller.tenant.toolbox(toolbox.toolbox)
            assert found is not None  # may_open checked it
            changes = parts.toolbox_endpoint.changes
            await serve_stream(changes, caller, found, scope, receive, send)
            return
        # An `initialize` (2025-11-25): no session yet, no protocol version header yet.
        if session_id is None and PROTOCOL_HEADER not in headers and scope["method"] == "POST":
            send = with_new_session_id(send, state)
        with parts.in_flight.enter(caller.key.key_id) as admitted:
            if admitted:
                await self._serve(parts, scope, receive, send, state, toolbox is not None)
                return
        parts.recorder.in_flight_refused(caller.tenant.slug)
        await refusal(
            send,
            429,
            "rate_limited",
            TOO_MANY_IN_FLIGHT.format(limit=parts.in_flight.limit),
            [(b"retry-after", str(IN_FLIGHT_RETRY_SECONDS).encode())],
            code="RATE_LIMITED",
            details={"retry_after": IN_FLIGHT_RETRY_SECONDS},
        )

    async def _serve(
        self,
        parts: GatewayParts,
        scope: Scope,
        receive: Receive,
        send: Send,
        state: RequestState,
        toolbox: bool = False,
    ) -> None:
        """Hand the request to the SDK: as one JSON body when it may be, else as SSE
        (`toolbox`: the toolbox endpoint's SDK server)."""
        endpoint = (parts.toolbox_endpoint if toolbox else None) or parts
        path = toolbox_path(scope.get("path", "")) if toolbox else None
        serving = SERVING.set((state.caller, path.toolbox) if path is not None else None)
        try:
            await self._hand_over(endpoint, parts, scope, receive, send, state)
        finally:
            SERVING.reset(serving)

    async def _hand_over(
        self,
        endpoint: GatewayParts | ToolboxEndpoint,
        parts: GatewayParts,
        scope: Scope,
        receive: Receive,
        send: Send,
        state: RequestState,
    ) -> None:
        sse = endpoint.server.session_manager
        json_answers = endpoint.json_answers
        if scope["method"] != "POST":
            await sse.handle_request(scope, receive, send)
            return
        messages, whole = await read_body(receive, self.options.max_request_bytes)
        replayed = replay(messages, receive)
        body = b"".join(m.get("body", b"") for m in messages) if whole else b""
        # Applied here: served statelessly, the notification's own server is ended as soon
        # as it is accepted, before the SDK would hand it on.
        parts.calls.apply(state, body)
        if may_answer(body):  # a client's answer to a server's question
            await parts.questions.apply(state, body)
        if state.session_id is not None and any(method in body for method in DECLARED_FOR):
            await self._declared(parts, state)
        asking = state.capabilities and any(method in body for method in ASKING)
        if not whole or asking or not answers_as_json(scope, body):
            await sse.handle_request(scope, replayed, send)  # its body limit answers 413
            return
        # A bare task rather than a task group: no group's bookkeeping on every call.
        with anyio.CancelScope() as served:
            watcher = asyncio.get_running_loop().create_task(until_disconnect(receive, served))
            try:
                await json_answers.handle_request(scope, replayed, send)
            finally:
                watcher.cancel()

    @staticmethod
    async def _declared(parts: GatewayParts, state: RequestState) -> None:
        """A tools/call (or `DECLARED_FOR`'s other request) of a 2025-11-25 session whose
        client declared elicitation, sampling or roots at its `initialize`: what it
        declared, in `state` (a call, `ASKING`'s, is then served as a stream, on which a
        server's question can reach it)."""
        names = parts.recorder.client_names
        if names is None or state.session_id is None:
            return
        declared = (await names.find(state.session_id)).capabilities
        state.capabilities = dict(declared) if declared else None


def modern(headers: dict[bytes, bytes]) -> bool:
    """Whether the request says it is of 2026-07-28 or later (its protocol version header)."""
    return headers.get(PROTOCOL_HEADER, b"").decode("latin-1") in MODERN_PROTOCOL_VERSIONS


async def store_unavailable(send: Send, exc: StoreUnavailable) -> None:
    """503 with the short reason and its incident id (the log holds the store's error)."""
    retry = [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())]
    await refusal(send, 503, "store_unavailable", str(exc), retry, incident=exc.incident)


async def _announce_store(parts: GatewayParts) -> None:
    """Record this gateway's shared store in the database, and warn when the gateways of
    this database used another one until now (they share nothing with this one)."""
    store = describe_store(parts.options.cache)
    before = await record_store(store)
    if before:
        logger.warning(
            "This gateway's shared store is %s; the gateways of this database used %s "
            "until now: any still running there share nothing (open toolboxes, "
            "revocations, rate limits) with this one",
            store,
            before,
        )


@asynccontextmanager
async def _claimed_uid_base(parts: GatewayParts) -> AsyncIterator[None]:
    """With the sandbox on, its uid range on this host is claimed for this installation,
    held while the gateway runs (UidRangeClaimed when another installation has it: the
    gateway does not start)."""
    if not parts.sandbox.enabled:
        yield
        return
    found = parts.installation
    claim = await anyio.to_thread.run_sync(
        claim_uid_base,
        Path(parts.options.sandbox_uid_claims_dir),
        parts.sandbox.uid_base,
        found.id,
        found.database,
        found.database_file,
    )
    try:
        yield
    finally:
        claim.close()


SDK_MANAGER_LOGGER = logging.getLogger("mcp.server.streamable_http_manager")
SDK_MANAGER_LIFECYCLE = frozenset(
    {"StreamableHTTP session manager started", "StreamableHTTP session manager shutting down"}
)


@asynccontextmanager
async def _unannounced(manager: StreamableHTTPSessionManager) -> AsyncIterator[None]:
    """Run the gateway's second SDK manager without its start and stop lines: the SDK logs
    them for each manager, and one gateway starting is one event (the first manager's)."""
    quiet = DropMessages(SDK_MANAGER_LIFECYCLE)
    SDK_MANAGER_LOGGER.addFilter(quiet)
    try:
        async with manager.run():
            SDK_MANAGER_LOGGER.removeFilter(quiet)
            try:
                yield
            finally:
                SDK_MANAGER_LOGGER.addFilter(quiet)
    finally:
        SDK_MANAGER_LOGGER.removeFilter(quiet)


@asynccontextmanager
async def _toolbox_endpoint_running(parts: GatewayParts) -> AsyncIterator[None]:
    """The toolbox endpoint's two SDK managers (`front.toolbox_server`), run unannounced."""
    endpoint = parts.toolbox_endpoint
    if endpoint is None:
        yield
        return
    async with _unannounced(endpoint.server.session_manager), _unannounced(endpoint.json_answers):
        yield
