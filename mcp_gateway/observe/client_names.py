"""Client name and version per 2025-11-25 session, for the call log, whether the client
declared URL elicitation, and the capabilities a server may ask it input through: sent
once, in `initialize`; later requests (served statelessly, maybe by another process) carry
only the session id."""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, NamedTuple

from mcp.server.context import ServerRequestContext
from mcp_types import CLIENT_INFO_META_KEY

logger = logging.getLogger("workbench.telemetry")

CLIENT_INFO_ENTRIES = 4096  # sessions whose client name this process remembers


class ClientInfo(NamedTuple):
    """A session's client: its name, its version, whether it declared URL elicitation, and
    its declared elicitation, sampling and roots (wire form; `downstream.envelope.relayed`)."""

    name: str
    version: str
    url_elicitation: bool = False
    capabilities: dict[str, Any] = {}


NO_CLIENT = ClientInfo("", "")


class ClientNames:
    """A 2025-11-25 session's client (`ClientInfo`): sent once, in `initialize`; later
    requests (served statelessly, maybe by another process) carry only the session id.
    Kept in the shared store, with a small per-process copy."""

    def __init__(self, store: Any, idle_seconds: float) -> None:
        self.store = store
        self.idle_seconds = idle_seconds
        self._local: OrderedDict[str, ClientInfo] = OrderedDict()

    def _remember(self, session_id: str, info: ClientInfo) -> None:
        self._local[session_id] = info
        self._local.move_to_end(session_id)
        while len(self._local) > CLIENT_INFO_ENTRIES:
            self._local.popitem(last=False)

    async def save(self, session_id: str, info: ClientInfo) -> None:
        self._remember(session_id, info)
        try:
            await self.store.set(f"wb:client:{session_id}", info, self.idle_seconds)
        except Exception:  # bookkeeping: never fails the request
            logger.exception("Could not record the client of session %s", session_id)

    async def find(self, session_id: str) -> ClientInfo:
        info = self._local.get(session_id)
        if info is None:
            try:
                found = await self.store.get(f"wb:client:{session_id}")
            except Exception:
                found = None
            info = NO_CLIENT
            if isinstance(found, list) and len(found) >= 2:  # entries of before: 2 or 3 values
                declared = found[3] if len(found) > 3 and isinstance(found[3], dict) else {}
                url = len(found) > 2 and found[2] is True
                info = ClientInfo(str(found[0]), str(found[1]), url, declared)
            self._remember(session_id, info)
        return info


def declares_url_elicitation(ctx: ServerRequestContext[Any, Any]) -> bool:
    """An `initialize` whose capabilities name URL elicitation (2025-11-25:
    `"elicitation": {"url": {}}`; an empty `elicitation` is form mode only)."""
    params = ctx.params or {}
    capabilities = params.get("capabilities") if isinstance(params, dict) else None
    elicitation = capabilities.get("elicitation") if isinstance(capabilities, dict) else None
    return isinstance(elicitation, dict) and isinstance(elicitation.get("url"), dict)


def client_of(ctx: ServerRequestContext[Any, Any]) -> tuple[str, str] | None:
    """The client named in this request: `initialize`'s or `server/discover`'s params, or
    a 2026-07-28 request's envelope."""
    params = ctx.params or {}
    info = params.get("clientInfo") if isinstance(params, dict) else None
    if not isinstance(info, dict):
        client_params = getattr(ctx.session, "client_params", None)
        if client_params is not None:
            return client_params.client_info.name[:200], (client_params.client_info.version or "")[
                :100
            ]
        meta = ctx.meta or {}
        info = meta.get(CLIENT_INFO_META_KEY) if isinstance(meta, dict) else None
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        version = info.get("version")
        return info["name"][:200], (version if isinstance(version, str) else "")[:100]
    return None
