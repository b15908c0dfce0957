"""Compose Django and the gateway into one ASGI app with one lifespan."""

import logging
from typing import Any

from django.conf import settings
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_gateway import sandbox, telemetry
from mcp_gateway.calllog import CallLog
from mcp_gateway.http import Gateway
from mcp_gateway.options import GatewayOptions
from mcp_gateway.telemetry_http import METRICS_PATH, MetricsEndpoint

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
        open_tenant_rate=settings.WORKBENCH_OPEN_TENANT_RATE_LIMIT,
        open_tenant_burst=settings.WORKBENCH_OPEN_TENANT_RATE_BURST,
        open_key_rate=settings.WORKBENCH_OPEN_KEY_RATE_LIMIT,
        open_key_burst=settings.WORKBENCH_OPEN_KEY_RATE_BURST,
        key_max_in_flight=settings.WORKBENCH_KEY_MAX_IN_FLIGHT,
        cache=settings.CACHES["default"],
        uid_claims_dir=settings.WORKBENCH_SANDBOX_UID_CLAIMS_DIR,
    )


def build_telemetry() -> telemetry.Telemetry:
    """Metrics (multiprocess files under WORKBENCH_METRICS_DIR), spans when OTLP is
    configured, and the call log unless WORKBENCH_CALL_LOG is off."""
    telemetry.configure_metrics(settings.WORKBENCH_METRICS_DIR)
    telemetry.configure_tracing()
    call_log = (
        CallLog(settings.WORKBENCH_CALL_LOG_QUEUE, settings.WORKBENCH_CALL_LOG_BATCH)
        if settings.WORKBENCH_CALL_LOG
        else None
    )
    return telemetry.Telemetry(call_log=call_log)


def build_gateway(options: GatewayOptions | None = None) -> Gateway:
    sandbox.configure(sandbox.SandboxPolicy.from_settings())  # warns when it is off
    return Gateway(options or gateway_options(), build_telemetry())


def build_application(django_app: ASGIApp, gateway: Gateway | None = None) -> ASGIApp:
    gateway = gateway or build_gateway()
    metrics = MetricsEndpoint(
        settings.WORKBENCH_METRICS_TOKEN, settings.WORKBENCH_METRICS_ALLOWED_IPS
    )

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
        if scope["type"] == "http" and path == METRICS_PATH:
            return await metrics(scope, receive, send)
        return await django_app(scope, receive, send)

    application.gateway = gateway  # type: ignore[attr-defined]
    return application
