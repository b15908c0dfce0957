"""The ASGI app behind `/mcp`: authenticate, name the session, hand over to the SDK.

The SDK serves statelessly (any process answers any request). For clients of the
2025-11-25 revision the gateway still gives each `initialize` an `Mcp-Session-Id`, so
that what a session opens stays its own; the id names state in the shared store and
needs no process to remember it. `Gateway` also assembles the gateway's parts from its
options.
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
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from mcp_gateway.database.reads import Snapshots, installation, saved_sign_in
from mcp_gateway.database.records import (
    SignInRecords,
    record_connection,
    record_store,
    save_calls,
)
from mcp_gateway.database.threads import close_thread_connections, release_database
from mcp_gateway.downstream.connected.accounts import ConnectedAccounts, SignInDoor
from mcp_gateway.downstream.pool import Pool
from mcp_gateway.downstream.sandbox.policy import active_policy
from mcp_gateway.downstream.sandbox.uid_claims import HeldClaim, claim_uid_base
from mcp_gateway.downstream.warmup import WarmUp
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
    Authenticator,
    AuthError,
    challenge,
    credential_headers,
    public_base,
    refused_key_prefix,
)
from mcp_gateway.front.cancellation import InFlightCalls
from mcp_gateway.front.endpoints import NOT_FOUND, NOT_FOUND_MESSAGE, tenant_of
from mcp_gateway.front.hostcheck import HostCheck, refuse
from mcp_gateway.front.request_state import RequestState
from mcp_gateway.front.server import build_server
from mcp_gateway.metatools.meta_tools import MetaTools
from mcp_gateway.metatools.open_state import OpenToolboxes
from mcp_gateway.metatools.ratelimit import InFlight, Limit, RateLimiter, buckets_for
from mcp_gateway.observe import metrics
from mcp_gateway.observe.calllog import CallLog
from mcp_gateway.observe.client_names import ClientNames
from mcp_gateway.observe.logfilter import DropMessages
from mcp_gateway.observe.recorder import Recorder
from mcp_gateway.options import GatewayOptions
from mcp_gateway.store.failure import RETRY_AFTER_SECONDS, StoreUnavailable
from mcp_gateway.store.shared import describe_store, installation_prefix, store_for

logger = logging.getLogger("workbench.auth")

NO_STANDALONE_STREAM = (
    "This endpoint offers no server-to-client stream (GET): send requests by POST; "
    "answers and progress come on each POST's own response."
)
PROTOCOL_HEADER = b"mcp-protocol-version"
TOO_MANY_IN_FLIGHT = (
    "This API key has {limit} requests in flight, its limit: retry when one has answered."
)
IN_FLIGHT_RETRY_SECONDS = 1
# The SDK's own Host/Origin check is off: `hostcheck` makes the same one, as set lookups.
NO_SDK_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)


class Gateway:
    def __init__(self, options: GatewayOptions) -> None:
        self.options = options
        self.shared = store_for(options.cache)
        call_log = (
            CallLog(
                save_calls,
                options.call_log_queue,
                options.call_log_batch,
                release=close_thread_connections,
            )
            if options.call_log
            else None
        )
        self.recorder = Recorder(call_log, ClientNames(self.shared, options.session_idle_seconds))
        self.snapshots = Snapshots(self.shared)
        self.auth = Authenticator(self.snapshots)
        self.open_toolboxes = OpenToolboxes(options.session_idle_seconds, self.shared)
        self.pool = Pool(
            connect_timeout=options.connect_timeout_seconds,
            idle_seconds=options.idle_connection_seconds,
            max_result_bytes=options.max_result_bytes,
            max_connections=options.max_connections,
            tenant_max_connections=options.tenant_max_connections,
            record=record_connection,
        )
        self.uid_claim: HeldClaim | None = None  # held while this gateway runs
        self.warm_up = WarmUp(
            self.pool,
            self.shared,
            self.snapshots.tenant,
            options.replica,
            options.warm_up_seconds,
            memory_seconds=options.idle_connection_seconds,
        )
        self.limiter = RateLimiter(
            buckets_for(options.cache),
            Limit.parse(options.tenant_rate_limit, options.tenant_rate_burst),
            Limit.parse(options.key_rate_limit, options.key_rate_burst),
            open_tenant=Limit.parse(options.open_tenant_rate_limit, options.open_tenant_rate_burst),
            open_key=Limit.parse(options.open_key_rate_limit, options.open_key_rate_burst),
        )
        self.in_flight = InFlight(options.key_max_in_flight)
        self.accounts = ConnectedAccounts(
            SignInDoor(
                read=saved_sign_in,
                claim_refresh=SignInRecords.claim_refresh,
                save_refreshed=SignInRecords.save_refreshed,
                release_claim=SignInRecords.release_claim,
                needs_reconnect=SignInRecords.needs_reconnect,
                new_link=SignInRecords.new_link,
            )
        )
        self.metatools = MetaTools(self.pool, self.open_toolboxes, self.limiter, self.accounts)
        self.calls = InFlightCalls()
        self.server = build_server(self.metatools, self.recorder, self.calls)
        self.host_check = HostCheck(options.allowed_hosts)
        # Two ways to answer a POST, both stateless: an SSE stream (a request that may ask
        # for progress) and one JSON body (every other; no stream machinery per request).
        self.server.streamable_http_app(
            stateless_http=True,
            transport_security=NO_SDK_HOST_CHECK,
            max_request_body_size=options.max_request_bytes,
        )
        self.json_answers = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            stateless=True,
            security_settings=NO_SDK_HOST_CHECK,
            max_request_body_size=options.max_request_bytes,
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """Enter once, in the task that owns the ASGI lifespan."""
        try:
            await self._start()
            async with (
                self.server.session_manager.run(),
                _unannounced(self.json_answers),
                self.pool.running(),
                self.recorder.running(),
                anyio.create_task_group() as background,
            ):
                background.start_soon(self.warm_up.run)
                try:
                    yield self
                finally:
                    background.cancel_scope.cancel()
        finally:
            if self.uid_claim is not None:
                self.uid_claim.close()
            await self.limiter.buckets.close()
            await self.shared.close()
            await release_database()

    async def _start(self) -> None:
        """Before serving: the database's installation names the entries this gateway keeps
        in the shared store (a new database never finds an old one's), and claims the
        sandbox's uid range on this host, held while it runs (UidRangeClaimed when another
        installation has it: the gateway does not start)."""
        installation_id, database, database_file = await installation()
        prefix = installation_prefix(installation_id)
        self.snapshots.installation = installation_id
        self.open_toolboxes.prefix = prefix
        self.limiter.prefix = prefix
        self.warm_up.prefix = prefix
        store = describe_store(self.options.cache)
        before = await record_store(store)
        if before:
            logger.warning(
                "This gateway's shared store is %s; the gateways of this database used %s "
                "until now: any still running there share nothing (open toolboxes, "
                "revocations, rate limits) with this one",
                store,
                before,
            )
        policy = active_policy()
        if policy.enabled:
            self.uid_claim = await anyio.to_thread.run_sync(
                claim_uid_base,
                Path(self.options.sandbox_uid_claims_dir),
                policy.uid_base,
                installation_id,
                database,
                database_file,
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if credential_headers(scope["headers"]) > 1:
            metrics.auth_refused(MULTIPLE_CREDENTIALS)
            logger.info("refused: %s", MULTIPLE_CREDENTIALS)
            await refusal(send, 400, MULTIPLE_CREDENTIALS, MULTIPLE_CREDENTIALS_MESSAGE)
            return
        headers = dict(scope["headers"])
        try:
            caller = await self.auth.authenticate(headers)
        except AuthError as exc:
            metrics.auth_refused(exc.reason)
            prefix = refused_key_prefix(headers)
            logger.info(
                "refused: %s (key prefix %s)", exc.reason, prefix, extra={"key_prefix": prefix}
            )
            challenged = [(b"www-authenticate", challenge(scope, exc, self.host_check))]
            await refusal(send, 401, exc.reason, exc.message, challenged)
            return
        except StoreUnavailable as exc:
            await store_unavailable(send, exc)
            return
        slug = tenant_of(scope.get("path", ""))
        if slug is not None and slug != caller.tenant.slug:
            # Another tenant's slug and an unknown one answer alike: nothing says which.
            await refusal(send, 404, NOT_FOUND, NOT_FOUND_MESSAGE)
            return
        session_id = headers.get(SESSION_HEADER, b"").decode("latin-1") or None
        if scope["method"] == "DELETE" and session_id:
            # The client ends its session. What it opened belongs to its key, and other
            # sessions of that key may be using it: nothing is forgotten.
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["method"] == "GET":
            # Served statelessly, nothing is ever sent on a standalone stream; holding one
            # open would cost a transport per idle client. The spec's answer: 405.
            allowed = [(b"allow", b"POST, DELETE")]
            await refusal(send, 405, "method_not_allowed", NO_STANDALONE_STREAM, allowed)
            return
        bad_host = self.host_check.refusal(scope, headers)
        if bad_host is not None:
            await refuse(send, *bad_host)
            return
        caller = replace(caller, base_url=public_base(scope, self.host_check))
        state = RequestState(caller, session_id)
        state.put(scope)
        # An `initialize` (2025-11-25): no session yet, no protocol version header yet.
        if session_id is None and PROTOCOL_HEADER not in headers and scope["method"] == "POST":
            send = with_new_session_id(send, state)
        with self.in_flight.enter(caller.key.key_id) as admitted:
            if admitted:
                await self._serve(scope, receive, send, state)
                return
        metrics.in_flight_refused(caller.tenant.slug)
        await refusal(
            send,
            429,
            "rate_limited",
            TOO_MANY_IN_FLIGHT.format(limit=self.in_flight.limit),
            [(b"retry-after", str(IN_FLIGHT_RETRY_SECONDS).encode())],
            code="RATE_LIMITED",
            details={"retry_after": IN_FLIGHT_RETRY_SECONDS},
        )

    async def _serve(self, scope: Scope, receive: Receive, send: Send, state: RequestState) -> None:
        """Hand the request to the SDK: as one JSON body when it may be, else as SSE."""
        sse = self.server.session_manager
        if scope["method"] != "POST":
            await sse.handle_request(scope, receive, send)
            return
        messages, whole = await read_body(receive, self.options.max_request_bytes)
        replayed = replay(messages, receive)
        body = b"".join(m.get("body", b"") for m in messages) if whole else b""
        # Applied here: served statelessly, the notification's own server is ended as soon
        # as it is accepted, before the SDK would hand it on.
        self.calls.apply(state, body)
        if not whole or not answers_as_json(scope, body):
            await sse.handle_request(scope, replayed, send)  # its body limit answers 413
            return
        # A bare task rather than a task group: no group's bookkeeping on every call.
        with anyio.CancelScope() as served:
            watcher = asyncio.get_running_loop().create_task(until_disconnect(receive, served))
            try:
                await self.json_answers.handle_request(scope, replayed, send)
            finally:
                watcher.cancel()


async def store_unavailable(send: Send, exc: StoreUnavailable) -> None:
    """503 with the short reason and its incident id (the log holds the store's error)."""
    retry = [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())]
    await refusal(send, 503, "store_unavailable", str(exc), retry, incident=exc.incident)


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
