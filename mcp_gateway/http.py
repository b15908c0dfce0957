"""The ASGI app behind `/mcp`: authenticate, name the session, hand over to the SDK.

The SDK serves statelessly (any process answers any request). For clients of the
2025-11-25 revision the gateway still gives each `initialize` an `Mcp-Session-Id`, so
that what a session opens stays its own; the id names state in the shared store and
needs no process to remember it.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from mcp_gateway import telemetry
from mcp_gateway.auth import Authenticator, AuthError, key_from_headers
from mcp_gateway.config import ConfigStore, release_database
from mcp_gateway.metatools import MetaTools
from mcp_gateway.options import GatewayOptions
from mcp_gateway.pool import Pool
from mcp_gateway.ratelimit import InFlight, Limit, RateLimiter, buckets_for
from mcp_gateway.server import CALLER_STATE, SESSION_STATE, build_server
from mcp_gateway.sessions import OpenToolboxes
from mcp_gateway.store import store_for
from toolboxes import keys

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


def transport_security(allowed_hosts: list[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection from Django's ALLOWED_HOSTS ('*' turns it off)."""
    if "*" in allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = [host for name in allowed_hosts for host in (name, f"{name}:*")]
    origins = [
        origin
        for name in allowed_hosts
        for scheme in ("http", "https")
        for origin in (f"{scheme}://{name}", f"{scheme}://{name}:*")
    ]
    return TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)


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


def _key_prefix(headers: dict[bytes, bytes]) -> str:
    """The prefix of the key a refused request sent (never the key), for the log."""
    try:
        return keys.parse_prefix(key_from_headers(headers)) or "-"
    except AuthError:
        return "-"


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
        self.server = build_server(self.metatools)
        self.server.streamable_http_app(
            stateless_http=True,
            transport_security=transport_security(options.allowed_hosts),
            max_request_body_size=options.max_request_bytes,
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """Enter once, in the task that owns the ASGI lifespan."""
        try:
            async with (
                self.server.session_manager.run(),
                self.pool.running(),
                self.telemetry.running(),
            ):
                yield self
        finally:
            await self.limiter.buckets.close()
            await self.shared.close()
            await release_database()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        try:
            caller = await self.auth.authenticate(headers)
        except AuthError as exc:
            telemetry.auth_refused(exc.reason)
            prefix = _key_prefix(headers)
            logger.info(
                "refused: %s (key prefix %s)", exc.reason, prefix, extra={"key_prefix": prefix}
            )
            await _json_response(
                send,
                401,
                {"error": exc.reason, "message": exc.message},
                [
                    (
                        b"www-authenticate",
                        f'Bearer error="invalid_token", error_description="{exc.message}"'.encode(),
                    )
                ],
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
        state = scope.setdefault("state", {})
        state[CALLER_STATE] = caller
        state[SESSION_STATE] = session_id
        # An `initialize` (2025-11-25): no session yet, no protocol version header yet.
        if session_id is None and PROTOCOL_HEADER not in headers and scope["method"] == "POST":
            send = _with_new_session_id(send, state)
        with self.in_flight.enter(caller.key.key_id) as admitted:
            if admitted:
                await self.server.session_manager.handle_request(scope, receive, send)
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
