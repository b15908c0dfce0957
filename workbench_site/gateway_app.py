"""Compose Django and the gateway into one ASGI app with one lifespan."""

import logging
from typing import Any

from django.conf import settings
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_gateway import (
    METRICS_PATH,
    Gateway,
    GatewayOptions,
    MetricsEndpoint,
    StartRefused,
    configure_process,
    is_gateway_path,
)
from workbench_site import drain

logger = logging.getLogger("workbench")


def build_gateway(options: GatewayOptions | None = None) -> tuple[Gateway, MetricsEndpoint]:
    """The gateway of this process, from its options (the settings'): what the process
    sets once (the sandbox's policies, metrics, spans: `configure_process`), the /metrics
    endpoint, and the /mcp app, which assembles its parts when its lifespan starts."""
    options = options or GatewayOptions.from_settings(settings)
    metrics = configure_process(options)
    return Gateway(options), metrics


def build_application(django_app: ASGIApp) -> ASGIApp:
    gateway, metrics = build_gateway()

    async def lifespan(receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        started = False
        try:
            async with gateway.running():
                drain.install(settings.WORKBENCH_DRAIN_SECONDS, gateway.end_streams)
                await send({"type": "lifespan.startup.complete"})
                started = True
                await receive()  # lifespan.shutdown
                logger.info("Shutting down: closing downstream connections")
        except StartRefused as exc:
            # The operator's to act on, and its text says what and how: that one line
            # (uvicorn logs it), not a traceback.
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
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
        if scope["type"] == "http" and is_gateway_path(path):
            return await gateway(scope, receive, send)
        if scope["type"] == "http" and path == METRICS_PATH:
            return await metrics(scope, receive, send)
        return await django_app(scope, receive, send)

    application.gateway = gateway  # type: ignore[attr-defined]
    return application
