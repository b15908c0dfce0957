"""The ASGI app behind `/mcp`: authenticate, name the session, hand over to the SDK.

The SDK serves statelessly (any process answers any request). For clients of the
2025-11-25 revision the gateway still gives each `initialize` an `Mcp-Session-Id`, so
that what a session opens stays its own; the id names state in the shared store and
needs no process to remember it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from mcp_gateway import sandbox, telemetry
from mcp_gateway.auth import (
    MULTIPLE_CREDENTIALS,
    MULTIPLE_CREDENTIALS_MESSAGE,
    Authenticator,
    AuthError,
    challenge,
    credential_headers,
    refused_key_prefix,
)
from mcp_gateway.cancellation import InFlightCalls
from mcp_gateway.config import ConfigStore, installation, release_database
from mcp_gateway.hostcheck import HostCheck, refuse
from mcp_gateway.metatools import MetaTools
from mcp_gateway.options import GatewayOptions
from mcp_gateway.pool import Pool
from mcp_gateway.ratelimit import InFlight, Limit, RateLimiter, buckets_for
from mcp_gateway.server import CALLER_STATE, SESSION_STATE, build_server
from mcp_gateway.sessions import OpenToolboxes
from mcp_gateway.store import installation_prefix, store_for
from mcp_gateway.uid_claims import claim_uid_base

logger = logging.getLogger("workbench.auth")

SESSION_HEADER = b"mcp-session-id"
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
# A body that may ask for progress: the key itself, or any JSON escape (which could spell
# it). Such a request is answered as an SSE stream, so that its progress can come on it.
PROGRESS_MARKERS = (b"progressToken", b"\\u")
CANCELLED = b"notifications/cancelled"


async def _read_body(receive: Receive, limit: int) -> tuple[list[Message], bool]:
    """The request's messages up to the end of its body (True), or up to the first one
    past `limit` bytes or not a body (False): at most `limit` plus one message in memory."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, False
        size += len(message.get("body", b""))
        if size > limit:
            return messages, False
        if not message.get("more_body", False):
            return messages, True


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = deque(messages)

    async def replayed() -> Message:
        return pending.popleft() if pending else await receive()

    return replayed


def _answers_as_json(scope: Scope, body: bytes) -> bool:
    """Whether a plain JSON body may answer this POST: the client accepts both forms (so
    refusals stay the SSE transport's own) and its request cannot ask for progress."""
    has_json, has_sse = check_accept_headers(Request(scope))
    return has_json and has_sse and not any(marker in body for marker in PROGRESS_MARKERS)


async def _json_response(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] = ()
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class Gateway:
    def __init__(
        self, options: GatewayOptions, recorder: telemetry.Telemetry | None = None
    ) -> None:
        self.options = options
        self.shared = store_for(options.cache)
        self.telemetry = recorder or telemetry.Telemetry()
        self.telemetry.client_names = telemetry.ClientNames(
            self.shared, options.session_idle_seconds
        )
        self.config = ConfigStore(self.shared)
        self.auth = Authenticator(self.config)
        self.open_toolboxes = OpenToolboxes(options.session_idle_seconds, self.shared)
        self.pool = Pool(
            connect_timeout=options.connect_timeout,
            idle_seconds=options.idle_connection_seconds,
            max_result_bytes=options.max_result_bytes,
            max_connections=options.max_connections,
            tenant_max_connections=options.tenant_max_connections,
        )
        self.limiter = RateLimiter(
            buckets_for(options.cache),
            Limit.parse(options.tenant_rate, options.tenant_burst),
            Limit.parse(options.key_rate, options.key_burst),
            open_tenant=Limit.parse(options.open_tenant_rate, options.open_tenant_burst),
            open_key=Limit.parse(options.open_key_rate, options.open_key_burst),
        )
        self.in_flight = InFlight(options.key_max_in_flight)
        self.metatools = MetaTools(self.pool, self.open_toolboxes, self.limiter, self.telemetry)
        self.calls = InFlightCalls()
        self.server = build_server(self.metatools, self.calls)
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
                self.json_answers.run(),
                self.pool.running(),
                self.telemetry.running(),
            ):
                yield self
        finally:
            await self.limiter.buckets.close()
            await self.shared.close()
            await release_database()

    async def _start(self) -> None:
        """Before serving: the database's installation names the entries this gateway keeps
        in the shared store (a new database never finds an old one's), and claims the
        sandbox's uid range on this host (UidRangeClaimed when another installation has it:
        the gateway does not start)."""
        installation_id, database = await installation()
        prefix = installation_prefix(installation_id)
        self.config.installation = installation_id
        self.open_toolboxes.prefix = prefix
        self.limiter.prefix = prefix
        policy = sandbox.active_policy()
        if policy.enabled:
            await anyio.to_thread.run_sync(
                claim_uid_base,
                Path(self.options.uid_claims_dir),
                policy.uid_base,
                installation_id,
                database,
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if credential_headers(scope["headers"]) > 1:
            telemetry.auth_refused(MULTIPLE_CREDENTIALS)
            logger.info("refused: %s", MULTIPLE_CREDENTIALS)
            body = {"error": MULTIPLE_CREDENTIALS, "message": MULTIPLE_CREDENTIALS_MESSAGE}
            await _json_response(send, 400, body)
            return
        headers = dict(scope["headers"])
        try:
            caller = await self.auth.authenticate(headers)
        except AuthError as exc:
            telemetry.auth_refused(exc.reason)
            prefix = refused_key_prefix(headers)
            logger.info(
                "refused: %s (key prefix %s)", exc.reason, prefix, extra={"key_prefix": prefix}
            )
            await _json_response(
                send,
                401,
                {"error": exc.reason, "message": exc.message},
                [(b"www-authenticate", challenge(scope, exc, self.host_check))],
            )
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
            await _json_response(
                send,
                405,
                {"error": "method_not_allowed", "message": NO_STANDALONE_STREAM},
                [(b"allow", b"POST, DELETE")],
            )
            return
        refusal = self.host_check.refusal(scope, headers)
        if refusal is not None:
            await refuse(send, *refusal)
            return
        state = scope.setdefault("state", {})
        state[CALLER_STATE] = caller
        state[SESSION_STATE] = session_id
        # An `initialize` (2025-11-25): no session yet, no protocol version header yet.
        if session_id is None and PROTOCOL_HEADER not in headers and scope["method"] == "POST":
            send = _with_new_session_id(send, state)
        with self.in_flight.enter(caller.key.key_id) as admitted:
            if admitted:
                await self._serve(scope, receive, send)
                return
        telemetry.in_flight_refused(caller.tenant.slug)
        await _json_response(
            send,
            429,
            {
                "error": "rate_limited",
                "code": "RATE_LIMITED",
                "message": TOO_MANY_IN_FLIGHT.format(limit=self.in_flight.limit),
                "details": {"retry_after": IN_FLIGHT_RETRY_SECONDS},
            },
            [(b"retry-after", str(IN_FLIGHT_RETRY_SECONDS).encode())],
        )

    def _cancel(self, state: dict[str, Any], body: bytes) -> None:
        """A client cancels one of its calls (2025-11-25: by notification). Applied here:
        served statelessly, the notification's own server is ended as soon as it is
        accepted, before the SDK would hand it on. The SDK still answers it (202)."""
        request_id = _cancelled_request(body)
        session_id = state.get(SESSION_STATE)
        if request_id is not None and session_id:
            self.calls.cancel((state[CALLER_STATE].key.key_id, session_id), request_id)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand the request to the SDK: as one JSON body when it may be, else as SSE."""
        sse = self.server.session_manager
        if scope["method"] != "POST":
            await sse.handle_request(scope, receive, send)
            return
        messages, whole = await _read_body(receive, self.options.max_request_bytes)
        replayed = _replay(messages, receive)
        body = b"".join(m.get("body", b"") for m in messages) if whole else b""
        if CANCELLED in body:
            self._cancel(scope["state"], body)
        if not whole or not _answers_as_json(scope, body):
            await sse.handle_request(scope, replayed, send)  # its body limit answers 413
            return
        # A bare task rather than a task group: no group's bookkeeping on every call.
        with anyio.CancelScope() as served:
            watcher = asyncio.get_running_loop().create_task(_until_disconnect(receive, served))
            try:
                await self.json_answers.handle_request(scope, replayed, send)
            finally:
                watcher.cancel()


def _cancelled_request(body: bytes) -> Any:
    """The request id a `notifications/cancelled` names, or None."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != CANCELLED.decode():
        return None
    params = message.get("params")
    return params.get("requestId") if isinstance(params, dict) else None


async def _until_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel `scope` when the client goes away (uvicorn also says so once the response is
    complete): what an SSE response does for its request, done for a JSON one."""
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    except Exception:  # the server's receive failed: the request ends with its scope
        logger.debug("receive failed while waiting for a disconnect", exc_info=True)
    scope.cancel()


def _with_new_session_id(send: Send, state: dict[str, Any]) -> Send:
    session_id = uuid.uuid4().hex.encode()
    state[telemetry.NEW_SESSION_STATE] = session_id.decode()  # the client log's key

    async def send_with_session(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 200:
            message = {
                **message,
                "headers": [*message.get("headers", []), (SESSION_HEADER, session_id)],
            }
        await send(message)

    return send_with_session
