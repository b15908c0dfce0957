"""The contract's error codes and texts, in one place (docs/contract.md).

Every failure a client can see is a `GatewayError`; `metatools.tools.error_result` turns it
into an MCP tool result with `isError: true` and `structuredContent.error`.
"""

import math
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    INVALID_PARAMETERS = "INVALID_PARAMETERS"
    TOOLBOX_NOT_FOUND = "TOOLBOX_NOT_FOUND"
    TOOLBOX_NOT_OPEN = "TOOLBOX_NOT_OPEN"
    SERVER_NOT_FOUND = "SERVER_NOT_FOUND"
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    TOOL_NOT_APPROVED = "TOOL_NOT_APPROVED"
    CONNECTION_FAILED = "CONNECTION_FAILED"
    DOWNSTREAM_ERROR = "DOWNSTREAM_ERROR"
    TIMEOUT = "TIMEOUT"
    FORBIDDEN = "FORBIDDEN"
    # Not in the spec's list (0.13): a call refused by a per-tenant or per-key rate limit.
    RATE_LIMITED = "RATE_LIMITED"
    # The server needs the caller's own sign-in (connected accounts): details.connect_url.
    AUTH_REQUIRED = "AUTH_REQUIRED"
    # A policy asks a person's approval of the call (issue 36): details.approval_url.
    APPROVAL_REQUIRED = "APPROVAL_REQUIRED"
    # That approval was refused, or expired (told once; the next call asks anew).
    APPROVAL_DENIED = "APPROVAL_DENIED"


# The codes a client that declared URL elicitation gets as one, and the detail that is its
# URL (`front.server.url_elicitation`).
ELICITED_URLS = {
    ErrorCode.AUTH_REQUIRED: "connect_url",
    ErrorCode.APPROVAL_REQUIRED: "approval_url",
}


class GatewayError(Exception):
    """`recorded_as`: the call log's outcome when it should say more than the code the
    client is given (never shown to the client)."""

    def __init__(self, code: ErrorCode, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        self.recorded_as = ""
        self.decision = ""  # the call log's tool-policy explanation (kernel.tool_policy)

    def as_structured(self) -> dict[str, Any]:
        return {
            "error": {"code": self.code.value, "message": self.message, "details": self.details}
        }


# open_toolbox


def open_invalid(what: str) -> GatewayError:
    """open_toolbox's and search_tools' `Invalid parameters: <what>`."""
    return GatewayError(ErrorCode.INVALID_PARAMETERS, f"Invalid parameters: {what}")


def search_bad_limit(low: int, high: int) -> GatewayError:
    """search_tools' `limit`: whatever is wrong with it, one text."""
    return open_invalid(f"limit must be an integer from {low} to {high}")


def toolbox_not_found(toolbox: str, available: list[str]) -> GatewayError:
    listed = ", ".join(available) if available else "(none)"
    return GatewayError(
        ErrorCode.TOOLBOX_NOT_FOUND,
        f"Error: Toolbox '{toolbox}' not found. Available toolboxes: {listed}",
        toolbox=toolbox,
        available=available,
    )


def sign_in_first(server: str, url: str) -> str:
    """The reason a server needs the caller's sign-in, with the one-time link that makes it."""
    return f"sign in to '{server}' first: {url}"


def auth_required(tool: str, server: str, toolbox: str, url: str) -> GatewayError:
    return GatewayError(
        ErrorCode.AUTH_REQUIRED,
        f"Error executing tool '{tool}' in server '{server}' (toolbox '{toolbox}'): "
        + sign_in_first(server, url),
        toolbox=toolbox,
        server=server,
        tool=tool,
        connect_url=url,
    )


def approval_required(
    tool: str, server: str, toolbox: str, url: str, decision: str
) -> GatewayError:
    """A call a policy holds for a person's approval: the link to the page that decides
    it (`decision`: the call log's "approval required by: ...")."""
    error = GatewayError(
        ErrorCode.APPROVAL_REQUIRED,
        f"Error executing tool '{tool}' in server '{server}' (toolbox '{toolbox}'): "
        f"approve this call first: {url}",
        toolbox=toolbox,
        server=server,
        tool=tool,
        approval_url=url,
    )
    error.decision = decision
    return error


def approval_denied(tool: str, server: str, toolbox: str, decision: str) -> GatewayError:
    """A held call refused, or not approved in time (`decision`: the call log's "not
    approved: refused by alice")."""
    error = GatewayError(
        ErrorCode.APPROVAL_DENIED,
        f"Error executing tool '{tool}' in server '{server}' (toolbox '{toolbox}'): "
        "the call was not approved",
        toolbox=toolbox,
        server=server,
        tool=tool,
    )
    error.decision = decision
    return error


def state_refused(tool: str, server: str, toolbox: str) -> GatewayError:
    """A 2026-07-28 retry's `requestState` that is not the gateway's for this caller and
    tool, or has expired (`metatools.input_state`): one text whatever the reason."""
    return GatewayError(
        ErrorCode.INVALID_PARAMETERS,
        f"Error executing tool '{tool}' in server '{server}' (toolbox '{toolbox}'): "
        "the request state is not valid for this call (altered, expired, or issued to "
        "another caller or tool); call the tool again without it",
        toolbox=toolbox,
        server=server,
        tool=tool,
    )


def held_elsewhere(tool: str, server: str, toolbox: str) -> GatewayError:
    """A retry naming a call held for its answer (`metatools.held_calls`) that this process
    does not hold: held by another worker process or replica, or ended."""
    return GatewayError(
        ErrorCode.INVALID_PARAMETERS,
        f"Error executing tool '{tool}' in server '{server}' (toolbox '{toolbox}'): "
        "the server's question waits on another process of the gateway, or no longer; "
        "call the tool again without the request state",
        toolbox=toolbox,
        server=server,
        tool=tool,
    )


def connect_failure_line(server: str, toolbox: str, reason: str) -> str:
    return f"Failed to connect to server '{server}' in toolbox '{toolbox}': {reason}"


def open_failed(
    toolbox: str,
    lines: list[str],
    incidents: dict[str, str] | None = None,
    connect_urls: dict[str, str] | None = None,
) -> GatewayError:
    """Every server failed. `incidents` (server: id) finds each full reason in the log;
    `incident` is the first, for clients that read one. A server that needs the caller's
    sign-in has its connect link there instead (and the first is `connect_url`)."""
    extra: dict[str, Any] = {}
    if incidents:
        extra = {"incident": next(iter(incidents.values())), "incidents": incidents}
    if connect_urls:
        extra["connect_url"] = next(iter(connect_urls.values()))
    return GatewayError(
        ErrorCode.CONNECTION_FAILED,
        f"Error opening toolbox '{toolbox}': " + "\n".join(lines),
        toolbox=toolbox,
        errors=lines,
        **extra,
    )


def open_too_large(toolbox: str, size: int, limit: int) -> GatewayError:
    return GatewayError(
        ErrorCode.DOWNSTREAM_ERROR,
        f"Error opening toolbox '{toolbox}': the tool list is too large "
        f"({size} bytes; the limit is {limit})",
        toolbox=toolbox,
    )


def _retry_after(wait: float) -> float:
    """Seconds to wait, to the hundredth and rounded up (a client that waits this long
    is never early), the same in the text and in `details.retry_after`."""
    return math.ceil(wait * 100) / 100


def open_rate_limited(toolbox: str, wait: float) -> GatewayError:
    seconds = _retry_after(wait)
    return GatewayError(
        ErrorCode.RATE_LIMITED,
        f"Error opening toolbox '{toolbox}': rate limit reached; retry in {seconds:.2f}s",
        toolbox=toolbox,
        retry_after=seconds,
    )


def forbidden(toolbox: str, available: list[str]) -> GatewayError:
    listed = ", ".join(available) if available else "(none)"
    return GatewayError(
        ErrorCode.FORBIDDEN,
        f"Error: This API key may not use toolbox '{toolbox}'. Available toolboxes: {listed}",
        toolbox=toolbox,
        available=available,
    )


# use_tool


def use_invalid(what: str) -> GatewayError:
    return GatewayError(ErrorCode.INVALID_PARAMETERS, f"Invalid tool invocation parameters: {what}")


EMPTY_FIELD_TEXTS = {
    "toolbox": "toolbox: Toolbox name cannot be empty",
    "server": "server: Server name cannot be empty",
    "name": "name: Tool name cannot be empty",
}


def use_empty(field: str) -> GatewayError:
    return GatewayError(ErrorCode.INVALID_PARAMETERS, EMPTY_FIELD_TEXTS[field], field=field)


def toolbox_not_open(toolbox: str) -> GatewayError:
    return GatewayError(
        ErrorCode.TOOLBOX_NOT_OPEN,
        f"Error executing tool: Toolbox '{toolbox}' is not open. Call open_toolbox first.",
        toolbox=toolbox,
    )


def server_not_found(server: str, toolbox: str) -> GatewayError:
    return GatewayError(
        ErrorCode.SERVER_NOT_FOUND,
        f"Error executing tool: Server '{server}' not found in toolbox '{toolbox}'",
        toolbox=toolbox,
        server=server,
    )


def tool_not_found(tool: str, server: str, toolbox: str) -> GatewayError:
    return GatewayError(
        ErrorCode.TOOL_NOT_FOUND,
        f"Error executing tool: Tool '{tool}' not found in server '{server}'",
        toolbox=toolbox,
        server=server,
        tool=tool,
    )


# The call log's outcome of a call to a tool the server's tool filter leaves out: the
# client is told the tool is not found (the contract), the admin that a filter refused it.
FILTERED = "filtered"


def tool_filtered(tool: str, server: str, toolbox: str) -> GatewayError:
    """A tool that `server`'s tool filter leaves out: to the client, as one it does not
    offer; in the call log, `filtered` (the row names the server whose filter it is)."""
    error = tool_not_found(tool, server, toolbox)
    error.recorded_as = FILTERED
    return error


# The call log's outcome of a call a tool policy refused (kernel.tool_policy): the client
# is told FORBIDDEN, the call log says which rule.
DENIED = "denied"


def tool_forbidden(tool: str, server: str, toolbox: str, decision: str = "") -> GatewayError:
    """A tool a policy denies to this caller: the client is not told which rule, the call
    log is (`decision`: "denied by: toolbox 'prod', role viewer")."""
    error = GatewayError(
        ErrorCode.FORBIDDEN,
        f"Error executing tool: Tool '{tool}' in server '{server}' is not allowed for this caller",
        toolbox=toolbox,
        server=server,
        tool=tool,
    )
    error.recorded_as = DENIED
    error.decision = decision
    return error


def held_line(tool: str, server: str) -> str:
    """One line of open_toolbox's `_held`: a tool pinned and waiting (kernel.pins)."""
    return f"Tool '{tool}' in server '{server}' is waiting for an admin's approval"


def tool_not_approved(tool: str, server: str, toolbox: str) -> GatewayError:
    return GatewayError(
        ErrorCode.TOOL_NOT_APPROVED,
        f"Error executing tool: {held_line(tool, server)}",
        toolbox=toolbox,
        server=server,
        tool=tool,
    )


def downstream_failed(
    code: ErrorCode,
    tool: str,
    server: str,
    toolbox: str,
    reason: str,
    incident: str | None = None,
    downstream: tuple[int, Any] | None = None,
) -> GatewayError:
    """`reason` is a classified phrase (with `incident`, the log line holding the rest)
    or the server's own error message (no incident: it is the tool's answer; `downstream`,
    its JSON-RPC error's code and data, in `downstream_code` and `downstream_data`)."""
    extra: dict[str, Any] = {"incident": incident} if incident else {}
    if downstream is not None:
        extra["downstream_code"], extra["downstream_data"] = downstream
    return GatewayError(
        code,
        f"Error executing tool '{tool}' in server '{server}' (toolbox '{toolbox}'): {reason}",
        toolbox=toolbox,
        server=server,
        tool=tool,
        **extra,
    )


def rate_limited(tool: str, server: str, toolbox: str, wait: float) -> GatewayError:
    seconds = _retry_after(wait)
    return GatewayError(
        ErrorCode.RATE_LIMITED,
        f"Error executing tool '{tool}' in server '{server}' (toolbox '{toolbox}'): "
        f"rate limit reached; retry in {seconds:.2f}s",
        toolbox=toolbox,
        server=server,
        tool=tool,
        retry_after=seconds,
    )


def cancelled() -> GatewayError:
    """The answer to a call its client cancelled; the SDK drops it, as nobody waits."""
    return GatewayError(ErrorCode.DOWNSTREAM_ERROR, "Error executing tool: cancelled by the client")
