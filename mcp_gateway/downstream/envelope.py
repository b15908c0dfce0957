"""What a downstream server is told of the client it serves: per request, or at connect.

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

A server spoken to in 2025-11-25 learns the client's capabilities once, at `initialize`:
each connection declares there exactly one set (`DeclaringSession`), the pool's base
connection of a server none, and a caller that declared some is served by the pool's
connection for its set (`canonical`, part of the pool's key: `metatools.connect`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

import mcp_types as types
from mcp.client._probe import negotiate_auto
from mcp.client.session import ClientSession
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from pydantic import ValidationError

from mcp_gateway.snapshots.servers import ServerConfig

logger = logging.getLogger("workbench.downstream")

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


def canonical(declared: Mapping[str, Any] | None) -> str:
    """The relayed part of a client's declared capabilities as one string, the same for
    the same set however it was written ("": none), as the SDK's types read it (a
    sub-field they do not know is not declared on): a pool key's `declares`."""
    kept = relayed(declared)
    if not kept:
        return ""
    try:
        wire = types.ClientCapabilities.model_validate(kept).model_dump(
            by_alias=True, mode="json", exclude_none=True
        )
    except ValidationError:  # the gateway's own SDK took them from the client: not seen
        logger.warning("client capabilities not declared on: %r", sorted(kept))
        return ""
    return json.dumps(wire, sort_keys=True, separators=(",", ":")) if wire else ""


def declared_set(declares: str) -> dict[str, Any]:
    """A `canonical` string's capabilities again (wire form)."""
    return dict(json.loads(declares)) if declares else {}


def offers_modern(server: ServerConfig) -> bool:
    """Whether the gateway offers this server 2026-07-28 (a stdio server; whether it speaks
    it is known once connected: `Connection.modern`). A remote server keeps 2025-11-25,
    whose `list_changed` comes on the standalone stream."""
    return server.is_stdio


class DeclaringSession(ClientSession):
    """A client session that declares `declares` (wire form; `canonical`'s) as its
    capabilities, and nothing else: the SDK declares a capability for each callback it is
    given (elicitation always as form and URL, roots with `listChanged`), while the
    connection answers a server's requests through all three callbacks
    (`server_questions`), for what it declared."""

    def __init__(self, *args: Any, declares: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._declares = types.ClientCapabilities.model_validate(dict(declares))

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        # The SDK's one place for what `initialize` and `server/discover` declare.
        return self._declares.model_copy(deep=True)


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
    # Offered to a stdio server only (`offers_modern`), where a request has no HTTP
    # headers: the SDK's stamp would compute the `Mcp-Param` headers of every tool call
    # for nothing. Read when 2026-07-28 is adopted (pinned: test_sdk_envelope_pins).
    session._resolve_param_headers = _no_headers  # type: ignore[method-assign]
    await negotiate_auto(session)
    if session.discover_result is not None:
        _per_request_capabilities(session)


def _no_headers(name: str, arguments: Mapping[str, Any]) -> dict[str, str]:
    return {}


def _per_request_capabilities(session: ClientSession) -> None:
    stamp = session._stamp  # the one seam the SDK has for a request's envelope

    def per_request(data: dict[str, Any], opts: Any) -> None:
        stamp(data, opts)
        meta = (data.get("params") or {}).get("_meta")
        if isinstance(meta, dict) and CLIENT_CAPABILITIES_META_KEY in meta:
            meta[CLIENT_CAPABILITIES_META_KEY] = _calling.get() or {}

    session._stamp = per_request
