"""`/metrics`: Prometheus' text format, for a scraper holding the bearer token
(WORKBENCH_METRICS_TOKEN, when set) or calling from an allowed address
(WORKBENCH_METRICS_ALLOWED_IPS, loopback by default). Anyone else gets 404: the endpoint
does not say that it exists."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable

import anyio
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.types import Receive, Scope, Send

from mcp_gateway.observe.metrics import exposition

METRICS_PATH = "/metrics"


class MetricsEndpoint:
    def __init__(self, token: str, allowed: Iterable[str]) -> None:
        self.token = token.encode()
        self.networks = [ipaddress.ip_network(entry, strict=False) for entry in allowed if entry]

    def allows(self, scope: Scope) -> bool:
        if self.token:
            sent = dict(scope.get("headers", [])).get(b"authorization", b"")
            scheme, _, value = sent.partition(b" ")
            if scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), self.token):
                return True
        client = scope.get("client")
        if not client:
            return False
        try:
            address = ipaddress.ip_address(client[0])
        except ValueError:
            return False
        return any(address in network for network in self.networks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") not in ("GET", "HEAD") or not self.allows(scope):
            await _respond(send, 404, b"Not Found", "text/plain; charset=utf-8")
            return
        body = await anyio.to_thread.run_sync(exposition)
        await _respond(send, 200, body, CONTENT_TYPE_LATEST)


async def _respond(send: Send, status: int, body: bytes, content_type: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
