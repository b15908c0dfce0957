"""Every request of the sign-in flow (discovery, keys, token, userinfo) goes through the
egress policy every outbound request shares (`kernel.egress.PinnedTransport`): an issuer
URL cannot make the admin reach what only the gateway may (loopback, cloud metadata,
private networks) unless the operator allows it (`WORKBENCH_EGRESS_ALLOW`). Redirects are
not followed.

Django's views are synchronous: each call runs its own short event loop (these run on a
view's thread, never on the server's loop).
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2

from kernel.egress import EgressPolicy, PinnedTransport

TIMEOUT_SECONDS = 10.0
MAX_BYTES = 1_000_000


class ProviderUnreachable(Exception):
    """The provider could not be reached or did not answer JSON (detail for the log)."""


async def _request(method: str, url: str, **kwargs: Any) -> tuple[int, Any]:
    transport = PinnedTransport(EgressPolicy.from_settings())
    async with httpx2.AsyncClient(
        transport=transport, timeout=TIMEOUT_SECONDS, follow_redirects=False
    ) as client:
        response = await client.request(method, url, **kwargs)
        if len(response.content) > MAX_BYTES:
            raise ProviderUnreachable(f"{url}: answer larger than {MAX_BYTES} bytes")
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, None


def request_json(method: str, url: str, **kwargs: Any) -> tuple[int, Any]:
    """(status, parsed JSON or None); ProviderUnreachable when nothing came back."""
    if not url.startswith(("https://", "http://")):
        raise ProviderUnreachable(f"not an HTTP URL: {url!r}")
    try:
        return anyio.run(lambda: _request(method, url, **kwargs))
    except ProviderUnreachable:
        raise
    except Exception as exc:  # refused by the egress policy, DNS, connect, timeout
        detail = getattr(exc, "detail", "") or str(exc)  # the gateway's failures keep one
        raise ProviderUnreachable(f"{method} {url}: {type(exc).__name__}: {detail}") from None


def get_json(url: str, **kwargs: Any) -> Any:
    status, data = request_json("GET", url, **kwargs)
    if status != 200 or not isinstance(data, dict):
        raise ProviderUnreachable(f"GET {url}: status {status}")
    return data
