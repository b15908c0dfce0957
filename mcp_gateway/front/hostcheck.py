"""DNS-rebinding protection for `/mcp`: the Host and Origin checks, as set lookups.

The SDK's own check (`mcp.server.transport_security`) scans a pattern list per request
(`name`, then every `name:*`). This one answers the same for the same `ALLOWED_HOSTS`
(Django's list; `*` turns the check off), with the same responses (421 "Invalid Host
header", 403 "Invalid Origin header") and the same precedence (a POST whose Content-Type
is not JSON is left to the SDK, which answers 400 before looking at the host), in one or
two set lookups: `name` exactly, or `name` followed by `:` and anything (a port).

A request with more than one Host or Origin header gets the same answer as a bad one
(issue 20): taking one of them, as a header mapping does, would let a good last one vouch
for a bad first one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from starlette.types import Scope, Send

logger = logging.getLogger("workbench.http")

SCHEMES = ("http", "https")


def _base(host: str) -> str | None:
    """What precedes the first `:` after the name (`[::1]:8000` -> `[::1]`), or None when
    no `:` follows the name."""
    if host.startswith("["):
        end = host.find("]") + 1
        return host[:end] if end and host[end : end + 1] == ":" else None
    name, colon, _ = host.partition(":")
    return name if colon else None


class HostCheck:
    def __init__(self, allowed_hosts: list[str]) -> None:
        self.enabled = "*" not in allowed_hosts
        # Names that hold a `:` outside brackets cannot be told from a port by splitting:
        # they are matched as the SDK does, by prefix (Django's host names never do).
        self._odd = tuple(
            name for name in allowed_hosts if ":" in name and not name.startswith("[")
        )
        self._hosts = frozenset(allowed_hosts)
        self._origins = frozenset(f"{s}://{name}" for name in allowed_hosts for s in SCHEMES)

    def _host_ok(self, host: str) -> bool:
        if host in self._hosts:
            return True
        if _base(host) in self._hosts:
            return True
        return any(host.startswith(name + ":") for name in self._odd)

    def _origin_ok(self, origin: str) -> bool:
        if origin in self._origins:
            return True
        scheme, sep, rest = origin.partition("://")
        if sep and scheme in SCHEMES and f"{scheme}://{_base(rest)}" in self._origins:
            return True
        return any(origin.startswith(f"{s}://{name}:") for s in SCHEMES for name in self._odd)

    def vouched_host(self, host: str) -> str | None:
        """`host` when it is one of ALLOWED_HOSTS, alone or with a port of digits, so that
        it may name the gateway back to the client (the 401's challenge); None otherwise,
        and always when the check is off (`*`: any Host would do)."""
        if not self.enabled:
            return None
        if host in self._hosts:
            return host
        base = _base(host)
        port = host[len(base) + 1 :] if base is not None else ""
        if base in self._hosts and port.isascii() and port.isdigit() and len(port) <= 5:
            return host
        return None

    def refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, bytes] | None:
        """The status and body to refuse this request with, or None."""
        if not self.enabled:
            return None
        if scope["method"] == "POST":
            content_type = headers.get(b"content-type", b"").decode("latin-1")
            if not content_type.lower().startswith("application/json"):
                return None  # the SDK refuses it first (400), whatever the host
        hosts, origins = _count(scope.get("headers") or headers.items())
        host = headers.get(b"host", b"").decode("latin-1")
        if hosts > 1 or not host or not self._host_ok(host):
            logger.warning("Invalid Host header: %s", _shown(host, hosts))
            return 421, b"Invalid Host header"
        origin = headers.get(b"origin", b"").decode("latin-1")
        if origins > 1 or (origin and not self._origin_ok(origin)):
            logger.warning("Invalid Origin header: %s", _shown(origin, origins))
            return 403, b"Invalid Origin header"
        return None


def _count(raw: Iterable[tuple[bytes, bytes]]) -> tuple[int, int]:
    """How many Host and Origin headers the request has (ASGI names are lowercase)."""
    hosts = origins = 0
    for name, _ in raw:
        if name == b"host":
            hosts += 1
        elif name == b"origin":
            origins += 1
    return hosts, origins


def _shown(value: str, count: int) -> str:
    if count > 1:
        return f"{count} of them"
    return value[:200] or "(missing)"


async def refuse(send: Send, status: int, body: bytes) -> None:
    """The SDK's refusal, byte for byte: a plain body with its length, no content type."""
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
