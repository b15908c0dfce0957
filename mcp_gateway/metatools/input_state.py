"""The gateway's own `requestState` of a 2026-07-28 input-required result.

A downstream server that needs input answers a call with `inputRequests` and an opaque
`requestState`; the client answers by calling again with both. The client gets the
gateway's state instead: the server's, sealed (`kernel.crypto.sealer`, the installation's
keys, so the retry may land on any process or replica) with whose call it is (the
credential), the tool (toolbox, server, name) and an expiry. A state altered, expired,
or presented by another credential or for another tool opens to nothing
(`StateRefused`), so no caller can forge one nor use another's. A call a person approved
(`metatools.approvals`) seals its run too: its retry with the same arguments is the same
approved call, not a new one to approve, once (the database door moves the run on, so a
state replayed, or a retry with other arguments, is asked anew).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from cryptography.fernet import InvalidToken

from kernel.crypto import sealer

PURPOSE = "workbench input-required request state"
# How long a client has to answer a server's request for input (a person fills a form).
STATE_TTL = 900.0
_VERSION = 1


class StateRefused(Exception):
    """The state is not one the gateway sealed for this credential and tool, in time."""


@dataclass(frozen=True, slots=True)
class Bound:
    """What a state is bound to: the credential (`Caller.owner`) and the tool."""

    owner: str
    toolbox: str
    server: str
    tool: str


@dataclass(frozen=True, slots=True)
class Opened:
    """An unsealed state: the server's own, and the approved run it continues
    (`snapshots.approvals.Passage.run`; "" when the call was not held)."""

    server_state: str | None
    approved: str = ""


def seal(
    bound: Bound, server_state: str | None, *, approved: str = "", now: float | None = None
) -> str:
    """The client's state around the server's (`None`: the server sent none)."""
    expires = (time.time() if now is None else now) + STATE_TTL
    payload = {
        "v": _VERSION,
        "o": bound.owner,
        "t": [bound.toolbox, bound.server, bound.tool],
        "s": server_state,
        "e": expires,
        "a": approved,
    }
    return sealer(PURPOSE).encrypt(json.dumps(payload, separators=(",", ":")).encode()).decode()


def unseal(bound: Bound, state: str, *, now: float | None = None) -> Opened:
    """What the client's `state` holds, if the gateway sealed it for `bound` and it has
    not expired; else `StateRefused`."""
    try:
        payload = json.loads(sealer(PURPOSE).decrypt(state.encode()))
    except (InvalidToken, ValueError, UnicodeError):
        raise StateRefused("not sealed by this installation") from None
    if not isinstance(payload, dict) or payload.get("v") != _VERSION:
        raise StateRefused("unknown form")
    if payload.get("o") != bound.owner:
        raise StateRefused("another caller's")
    if payload.get("t") != [bound.toolbox, bound.server, bound.tool]:
        raise StateRefused("another tool's")
    expires = payload.get("e")
    if not isinstance(expires, int | float) or (time.time() if now is None else now) > expires:
        raise StateRefused("expired")
    server_state, approved = payload.get("s"), payload.get("a")
    return Opened(
        server_state if isinstance(server_state, str) else None,
        approved if isinstance(approved, str) else "",
    )
