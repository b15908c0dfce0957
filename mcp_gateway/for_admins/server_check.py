"""Check servers the way the gateway connects them (the admin's "check" and the
`check_config` command).

Connect (the pool's own `Connection`, so the same transports, sandbox and classified
failures), list the tools, and the resources, templates and prompts the server declares
(what the toolbox endpoint would serve: a list that fails is a note on an ok status),
disconnect. Run from sync code (an admin view, a command) with
`check_servers`, which also records each result as the server's status, and its offer for
pinning, as a gateway connect does. Nothing is shared with a running gateway's pool.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from kernel.check_results import CheckResult
from mcp_gateway.database.reads import server_config
from mcp_gateway.database.records import record_check
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.options import current_options
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef

if TYPE_CHECKING:
    from mcp_gateway.downstream.connection import Connection
    from toolboxes.models import Server

CONCURRENT_CHECKS = 4  # servers started at once by one admin request


async def check_server(
    server: ServerConfig,
    ref: ServerRef,
    *,
    connect_timeout: float | None = None,
    max_result_bytes: int | None = None,
) -> CheckResult:
    # Imported here: the admin imports this module, and every manage.py command loads the
    # admin; the SDK (a second of start-up) is loaded by the first check instead.
    from mcp_gateway.downstream.causes import explain
    from mcp_gateway.downstream.connection import Connection

    options = current_options()  # the gateway's settings, as they are now
    conn = Connection(
        server,
        ref,
        connect_timeout or options.connect_timeout_seconds,
        max_result_bytes=max_result_bytes or options.max_result_bytes,
        sandbox=SandboxPolicy.of(options),
    )
    started = time.monotonic()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(conn.run)
        await conn.wait_ready()
        milliseconds = round((time.monotonic() - started) * 1000)
        notes = await listing_notes(conn) if conn.error is None else ()
        conn.stop()
    story = conn.failure
    if conn.error and story is not None:
        cause = await explain(server, story)
        return CheckResult(
            False, milliseconds, [], story.phrase, story.incident, story.stderr_tail, cause
        )
    return CheckResult(True, milliseconds, conn.definitions, notes=notes)


async def listing_notes(conn: Connection) -> tuple[str, ...]:
    """Each list the server declares (resources, templates, prompts) and could not give,
    with why: its own JSON-RPC error (code and message, redacted as its calls are), or the
    gateway's classified phrase."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    from mcp_gateway.downstream.failures import DownstreamFailure

    capabilities = conn.capabilities
    lists: list[tuple[str, Any, Any]] = []
    if capabilities is not None and capabilities.resources is not None:
        lists.append(("resources/list", types.ListResourcesRequest(), types.ListResourcesResult))
        lists.append(
            (
                "resources/templates/list",
                types.ListResourceTemplatesRequest(),
                types.ListResourceTemplatesResult,
            )
        )
    if capabilities is not None and capabilities.prompts is not None:
        lists.append(("prompts/list", types.ListPromptsRequest(), types.ListPromptsResult))
    notes: list[str] = []
    for method, request, result_type in lists:
        try:
            await conn.request(request, result_type)
        except MCPError as exc:
            why = f"the server's error {exc.error.code}: {conn.redact(exc.error.message)}"
            notes.append(f"{method} failed ({why})")
        except DownstreamFailure as exc:
            notes.append(f"{method} failed ({exc.reason})")
    return tuple(notes)


def check_servers(servers: Sequence[Server]) -> list[CheckResult]:
    """Check configured servers (rows with `toolbox__tenant` loaded), a few at once, and
    record each result: the server's status, and its offer for pinning. From sync code."""
    configs = [server_config(server) for server in servers]
    refs = [ServerRef(s.toolbox.tenant.slug, s.toolbox.name, s.name) for s in servers]
    results: list[CheckResult | None] = [None] * len(servers)
    limiter = anyio.CapacityLimiter(CONCURRENT_CHECKS)

    async def one(index: int) -> None:
        async with limiter:
            results[index] = await check_server(configs[index], refs[index])

    async def all_of_them() -> None:
        async with anyio.create_task_group() as task_group:
            for index in range(len(servers)):
                task_group.start_soon(one, index)

    anyio.run(all_of_them)
    done = [result for result in results if result is not None]
    for server, config, result in zip(servers, configs, done, strict=True):
        record_check(
            server,
            config.fingerprint,
            result.ok,
            result.milliseconds,
            result.reason,
            result.tools,
            result.incident or "",
            result.cause,
            notes="; ".join(result.notes),
        )
    return done
