"""Check a server the way the gateway connects it: the one function the admin calls.

Connect (the pool's own `Connection`, so the same transports, sandbox and classified
failures), list the tools, disconnect. Run from sync code (an admin view, a command) with
`check_servers` (which also records each result as the server's status, and its offer
for pinning, as a gateway connect does) or `check_server_sync`; nothing is shared with a
running gateway's pool.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from mcp_gateway import config
from mcp_gateway.config import ServerConfig
from mcp_gateway.pins import definition, digests

if TYPE_CHECKING:
    from toolboxes.models import Server

CONCURRENT_CHECKS = 4  # servers started at once by one admin request


@dataclass(frozen=True, slots=True)
class CheckResult:
    ok: bool
    milliseconds: int
    tools: list[dict[str, Any]] = field(default_factory=list)  # definitions (mcp_gateway.pins)
    reason: str = ""  # the classified phrase a client would read
    incident: str | None = None
    stderr_tail: tuple[str, ...] = ()  # redacted; for admins only


def _limits() -> tuple[float, int]:
    """The gateway's own connect timeout and result bound (its settings)."""
    from django.conf import settings

    return settings.WORKBENCH_CONNECT_TIMEOUT_SECONDS, settings.WORKBENCH_MAX_RESULT_BYTES


async def check_server(
    server: ServerConfig,
    label: str,
    *,
    connect_timeout: float | None = None,
    max_result_bytes: int | None = None,
) -> CheckResult:
    # Imported here: the admin imports this module, and every manage.py command loads the
    # admin; the SDK (a second of start-up) is loaded by the first check instead.
    from mcp_gateway.connection import Connection

    default_timeout, default_bytes = _limits()
    conn = Connection(
        server,
        label,
        connect_timeout or default_timeout,
        max_result_bytes=max_result_bytes or default_bytes,
    )
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


def check_servers(servers: Sequence[Server]) -> list[CheckResult]:
    """Check configured servers (rows with `toolbox__tenant` loaded), a few at once, and
    record each result: the server's status, and its offer for pinning. From sync code."""
    configs = [config.server_config(server) for server in servers]
    labels = [f"{s.toolbox.tenant.slug}/{s.toolbox.name}/{s.name}" for s in servers]
    results: list[CheckResult | None] = [None] * len(servers)
    limiter = anyio.CapacityLimiter(CONCURRENT_CHECKS)

    async def one(index: int) -> None:
        async with limiter:
            results[index] = await check_server(configs[index], labels[index])

    async def all_of_them() -> None:
        async with anyio.create_task_group() as task_group:
            for index in range(len(servers)):
                task_group.start_soon(one, index)

    anyio.run(all_of_them)
    done = [result for result in results if result is not None]
    for server, server_config, result in zip(servers, configs, done, strict=True):
        config.record_check(
            server,
            server_config.fingerprint,
            result.ok,
            result.milliseconds,
            result.reason,
            result.tools,
        )
    return done


# What one API key sees (the key's admin page): the gateway's own instructions, and per
# toolbox the tools `open_toolbox` would list after filters and approval, with their size
# beside the two meta-tools' (the context a client saves). Sizes are compact JSON of the
# definitions as `tools/list` carries them; tokens are estimated as bytes / 4.


def estimated_tokens(size: int) -> int:
    return -(-size // 4)


def _json_size(tools: Any) -> int:
    import json

    import mcp_types as types

    items = [types.Tool.model_validate(tool) if isinstance(tool, dict) else tool for tool in tools]
    dumped = [item.model_dump(by_alias=True, exclude_none=True, mode="json") for item in items]
    return len(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False).encode())


@dataclass(frozen=True, slots=True)
class SeenServer:
    name: str
    server_id: int
    discovered: bool  # tools were recorded for it (a connect or a check)
    tools: tuple[str, ...] = ()  # listed by open_toolbox
    held: tuple[str, ...] = ()  # offered and not filtered out, waiting for an admin
    filtered_out: tuple[str, ...] = ()
    size: int = 0  # bytes of the listed tools' definitions


@dataclass(frozen=True, slots=True)
class SeenToolbox:
    name: str
    description: str
    servers: tuple[SeenServer, ...]

    @property
    def size(self) -> int:
        return sum(server.size for server in self.servers)

    @property
    def tool_count(self) -> int:
        return sum(len(server.tools) for server in self.servers)


@dataclass(frozen=True, slots=True)
class KeySees:
    instructions: str
    toolboxes: tuple[SeenToolbox, ...]
    meta_tools_size: int  # bytes of open_toolbox and use_tool, what tools/list returns

    @property
    def size(self) -> int:
        return sum(toolbox.size for toolbox in self.toolboxes)

    @property
    def tool_count(self) -> int:
        return sum(toolbox.tool_count for toolbox in self.toolboxes)


def key_sees(prefix: str, offered: dict[int, list[dict[str, Any]]]) -> KeySees | None:
    """What a client of the key `prefix` is told and can open, from sync code.

    `offered`: per server id, the tool definitions the server offered last
    (`mcp_gateway.pins.definition`); the gateway's own snapshot decides filters and
    approval, exactly as `open_toolbox` does. None when there is no such key.
    """
    import mcp_types as types

    from mcp_gateway import config, instructions
    from mcp_gateway.auth import Caller
    from mcp_gateway.metatools import META_TOOLS

    record = config._load_key(prefix)
    tenant = config._load_tenant(record.tenant_id, record.version) if record else None
    if record is None or tenant is None:
        return None
    caller = Caller(record, tenant)
    toolboxes = []
    for toolbox in tenant.toolboxes:
        if not record.allows(toolbox.name):
            continue
        servers = []
        for server in toolbox.servers:
            definitions = offered.get(server.server_id)
            tools = [types.Tool.model_validate(item) for item in definitions or []]
            allowed = [tool for tool in tools if server.allows(tool.name)]
            waiting = server.pins.held_names(digests(allowed), server.fingerprint)
            listed = [tool for tool in allowed if tool.name not in waiting]
            servers.append(
                SeenServer(
                    server.name,
                    server.server_id,
                    definitions is not None,
                    tuple(tool.name for tool in listed),
                    tuple(sorted(waiting)),
                    tuple(tool.name for tool in tools if not server.allows(tool.name)),
                    _json_size(listed) if listed else 0,
                )
            )
        toolboxes.append(SeenToolbox(toolbox.name, toolbox.description, tuple(servers)))
    return KeySees(instructions.render(caller), tuple(toolboxes), _json_size(META_TOOLS))
