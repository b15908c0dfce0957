"""What one API key sees (the key's admin page): the gateway's own instructions, and per
toolbox the tools `open_toolbox` would list after filters and approval, with their size
beside the meta-tools' (the context a client saves). Sizes are compact JSON of the
definitions as `tools/list` carries them; tokens are estimated as bytes / 4."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kernel.pins import digests
from mcp_gateway.database.reads import load_key, load_tenant
from mcp_gateway.front import instructions
from mcp_gateway.metatools.policy import annotated_destructive
from mcp_gateway.snapshots.callers import Caller


def estimated_tokens(size: int) -> int:
    return -(-size // 4)


def _json_size(tools: Any) -> int:
    # Imported here: the admin imports this module (see server_check.check_server).
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
    denied: tuple[str, ...] = ()  # offered and approved, refused to this key by a tool policy


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
    meta_tools_size: int  # bytes of the meta-tools, what tools/list returns

    @property
    def size(self) -> int:
        return sum(toolbox.size for toolbox in self.toolboxes)

    @property
    def tool_count(self) -> int:
        return sum(toolbox.tool_count for toolbox in self.toolboxes)


def key_sees(prefix: str, offered: dict[int, list[dict[str, Any]]]) -> KeySees | None:
    """What a client of the key `prefix` is told and can open, from sync code.

    `offered`: per server id, the tool definitions the server offered last
    (`kernel.pins.definition`); the gateway's own snapshot decides filters and
    approval, exactly as `open_toolbox` does. None when there is no such key.
    """
    # Imported here: the admin imports this module, and the SDK (a second of start-up) is
    # loaded by the key's page instead of by every manage.py command.
    import mcp_types as types

    from mcp_gateway.metatools.tools import META_TOOLS

    record = load_key(prefix)
    tenant = load_tenant(record.tenant_id, record.version) if record else None
    if record is None or tenant is None:
        return None
    caller = Caller(record, tenant)
    subject = tenant.policy.subject(record.key_id, record.owner_id)  # as metatools.policy
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
            denied = [
                tool.name
                for tool in listed
                if not tenant.policy.decide(
                    subject, toolbox.name, server.name, tool.name, annotated_destructive(tool)
                ).allowed
            ]
            listed = [tool for tool in listed if tool.name not in denied]
            servers.append(
                SeenServer(
                    server.name,
                    server.server_id,
                    definitions is not None,
                    tuple(tool.name for tool in listed),
                    tuple(sorted(waiting)),
                    tuple(tool.name for tool in tools if not server.allows(tool.name)),
                    _json_size(listed) if listed else 0,
                    tuple(denied),
                )
            )
        toolboxes.append(SeenToolbox(toolbox.name, toolbox.description, tuple(servers)))
    return KeySees(instructions.render(caller), tuple(toolboxes), _json_size(META_TOOLS))
