"""Check a server the way the gateway connects it: the one function the admin calls.

Connect (the pool's own `Connection`, so the same transports, sandbox and classified
failures), list the tools, disconnect. Run from sync code (an admin view, a command) with
`check_server_sync`; nothing is shared with a running gateway's pool.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcp_gateway.config import ServerConfig
from mcp_gateway.connection import Connection
from mcp_gateway.pins import definition

DEFAULT_CONNECT_TIMEOUT = 30.0
DEFAULT_MAX_RESULT_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class CheckResult:
    ok: bool
    milliseconds: int
    tools: list[dict[str, Any]] = field(default_factory=list)  # definitions (mcp_gateway.pins)
    reason: str = ""  # the classified phrase a client would read
    incident: str | None = None
    stderr_tail: tuple[str, ...] = ()  # redacted; for admins only


async def check_server(
    server: ServerConfig,
    label: str,
    *,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> CheckResult:
    conn = Connection(server, label, connect_timeout, max_result_bytes=max_result_bytes)
    started = time.monotonic()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(conn.run)
        await conn.wait_ready()
        milliseconds = round((time.monotonic() - started) * 1000)
        conn.stop()
    pipe = getattr(conn, "_stderr", None)  # the connection's own stderr pipe, if stdio
    tail = tuple(pipe.tail) if pipe is not None else ()
    if conn.error:
        return CheckResult(False, milliseconds, [], conn.error, conn.incident, tail)
    return CheckResult(True, milliseconds, [definition(tool) for tool in conn.tools])


def check_server_sync(server: ServerConfig, label: str, **options: Any) -> CheckResult:
    """From a thread without an event loop (Django's sync views and commands)."""
    return anyio.run(lambda: check_server(server, label, **options))
