"""What one meta-tool call came to, as the meta-tools hand it to the recording side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernel.redaction import Redactor
from mcp_gateway.snapshots.servers import ServerConfig, ToolboxConfig

if TYPE_CHECKING:
    import mcp_types as types


@dataclass(frozen=True, slots=True)
class Named:
    """What the client named (strings only, whatever else its arguments held): the call
    log keeps it as sent."""

    toolbox: str = ""
    server: str = ""
    tool: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """`result`: what the client is answered (None: the client cancelled the call; an
    input-required result: the server asked the client for input, 2026-07-28).
    `error_code` and `incident`: set when the result is the gateway's own error, not the
    downstream's (`recorded_as`: the call log's outcome when it says more than the code,
    `filtered`, `denied`). `toolbox` and `server`: what the configuration knows of the names (None:
    no such toolbox or server). `redactors`: those of the connections that served the
    call, which clean its captured payload."""

    result: types.CallToolResult | types.InputRequiredResult | None
    named: Named = Named()
    toolbox: ToolboxConfig | None = None
    server: ServerConfig | None = None
    error_code: str = ""
    incident: str = ""
    redactors: tuple[Redactor, ...] = ()
    recorded_as: str = ""
    decision: str = ""  # what the tenant's tool policies decided, where a rule or default did
    # What the secrets guard removed from the result: each kind and how often (no value).
    secrets_removed: tuple[tuple[str, int], ...] = ()
