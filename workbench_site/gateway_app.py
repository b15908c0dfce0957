"""Compose Django and the gateway into one ASGI app with one lifespan."""

import logging
from typing import Any

from django.conf import settings
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_gateway.http import Gateway
from mcp_gateway.options import GatewayOptions

logger = logging.getLogger("workbench")

MCP_PATH = "/mcp"


def gateway_options() -> GatewayOptions:
    return GatewayOptions(
        allowed_hosts=settings.ALLOWED_HOSTS,
        session_idle_seconds=settings.WORKBENCH_SESSION_IDLE_SECONDS,
        connect_timeout=settings.WORKBENCH_CONNECT_TIMEOUT_SECONDS,
        idle_connection_seconds=settings.WORKBENCH_IDLE_CONNECTION_SECONDS,
        max_request_bytes=settings.WORKBENCH_MAX_REQUEST_BYTES,
        max_result_bytes=settings.WORKBENCH_MAX_RESULT_BYTES,
        max_connections=settings.WORKBENCH_MAX_CONNECTIONS,
        tenant_max_connections=settings.WORKBENCH_TENANT_MAX_CONNECTIONS,
        tenant_rate=settings.WORKBENCH_TENANT_RATE_LIMIT,
        tenant_burst=settings.WORKBENCH_TENANT_RATE_BURST,
        key_rate=settings.WORKBENCH_KEY_RATE_LIMIT,
        key_burst=settings.WORKBENCH_KEY_RATE_BURST,
        cache=settings.CACHES["default"],
    )


def build_gateway(options: GatewayOptions | None = None) -> Gateway:
    return Gateway(options or gateway_options())


def build_application(django_app: ASGIApp, gateway: Gateway | None = None) -> ASGIApp:
    gateway = gateway or build_gateway()

    async def lifespan(receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        started = False
        try:
            async with gateway.running():
                await send({"type": "lifespan.startup.complete"})
                started = True
                await receive()  # lifespan.shutdown
                logger.info("Shutting down: closing downstream connections")
        except Exception as exc:
            logger.exception("Gateway lifespan failed")
            failed = "lifespan.shutdown.failed" if started else "lifespan.startup.failed"
            await send({"type": failed, "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})

    async def application(scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] == "lifespan":
            return await lifespan(receive, send)
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == MCP_PATH or path == MCP_PATH + "/"):
            return await gateway(scope, receive, send)
        return await django_app(scope, receive, send)

    application.gateway = gateway  # type: ignore[attr-defined]
    return application
