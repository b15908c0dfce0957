"""What a downstream server is told of the client it serves, per request.

A pooled connection serves every session of a tenant, so it cannot declare one client's
capabilities at connect. A stdio server that speaks 2026-07-28 reads the client's
capabilities from each request's `_meta` (`io.modelcontextprotocol/clientCapabilities`):
the gateway speaks that revision to it where it can, and puts in each request the
capabilities of the client whose call it is (elicitation, sampling and roots, as that
client declared them; nothing else), never more. Nothing a client did not declare is
claimed for it, so a server answers a client that declared nothing as it would directly.

The SDK's `ClientSession` stamps one fixed set of capabilities on every request (its
`_stamp`, installed at `discover`); `_per_request_capabilities` wraps that stamp once, and
the set comes from `calling_capabilities` (a context variable: the stamp runs in the
calling task, inside `send_request`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

from mcp.client._probe import negotiate_auto
from mcp.client.session import ClientSession
from mcp_types import CLIENT_CAPABILITIES_META_KEY

# The client capabilities a server may ask input through: what of a calling client's
# declaration passes on (its extensions, experimental and tasks describe its session with
# the gateway, not with the server).
RELAYED_CAPABILITIES = ("elicitation", "sampling", "roots")

_calling: ContextVar[dict[str, Any] | None] = ContextVar("calling_capabilities", default=None)


def relayed(declared: Mapping[str, Any] | None) -> dict[str, Any]:
    """The part of a client's declared capabilities (wire form) a server is told of."""
    if not isinstance(declared, Mapping):
        return {}
    return {key: declared[key] for key in RELAYED_CAPABILITIES if declared.get(key) is not None}


def calling_capabilities(declared: Mapping[str, Any] | None) -> AbstractContextManager[None]:
    """The requests sent within carry `declared` (already `relayed`) as the client's. A
    client that declared none needs nothing set: the stamp's default is none (`_calling`
    is set only within this, around one request's sending, in the calling task)."""
    if not declared:
        return _DECLARED_NONE
    return _declaring(declared)


_DECLARED_NONE: AbstractContextManager[None] = nullcontext()


@contextmanager
def _declaring(declared: Mapping[str, Any]) -> Iterator[None]:
    token = _calling.set(dict(declared))
    try:
        yield
    finally:
        _calling.reset(token)


async def negotiate(session: ClientSession, *, modern: bool) -> None:
    """`modern`: offer 2026-07-28 first (`server/discover`; a server that does not speak
    it gets the `initialize` handshake, as the SDK's own client does); else 2025-11-25."""
    if not modern:
        await session.initialize()
        return
    await negotiate_auto(session)
    if session.discover_result is not None:
        _per_request_capabilities(session)


def _per_request_capabilities(session: ClientSession) -> None:
    stamp = session._stamp  # the one seam the SDK has for a request's envelope

    def per_request(data: dict[str, Any], opts: Any) -> None:
        stamp(data, opts)
        meta = (data.get("params") or {}).get("_meta")
        if isinstance(meta, dict) and CLIENT_CAPABILITIES_META_KEY in meta:
            meta[CLIENT_CAPABILITIES_META_KEY] = _calling.get() or {}

    session._stamp = per_request
