"""What the gateway knows of a tenant's configuration: immutable snapshots of its toolboxes
and servers, read from the database by `database.reads` and never written back."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import NamedTuple

from kernel.pins import Pins
from kernel.tool_policy import EMPTY as NO_POLICY
from kernel.tool_policy import Policy
from mcp_gateway.snapshots.sandbox import SandboxSpec


class ServerRef(NamedTuple):
    """Which server, by the names a metric, a span and a log line give it."""

    tenant: str
    toolbox: str
    server: str

    def __str__(self) -> str:
        return f"{self.tenant}/{self.toolbox}/{self.server}"


@dataclass(frozen=True, slots=True)
class ServerConfig:
    name: str
    transport: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    tool_filters: tuple[str, ...] = ("*",)
    timeout: float = 60.0
    idle_timeout: float | None = None  # None: the gateway's own setting
    sandbox: SandboxSpec = field(default_factory=SandboxSpec)  # stdio: mounts, network, limits
    pins: Pins = field(default_factory=Pins)  # approved tool definitions (kernel.pins)
    # A catalog-made server's secret parameter values, wherever the entry put them (args,
    # URL): its connection redacts them with its env and header values.
    secrets: tuple[str, ...] = field(default=(), repr=False)
    # How the gateway signs in (toolboxes' AuthMode values); OAuth modes: `downstream.connected`.
    auth: str = "none"
    oauth_client_id: str = ""  # an admin-entered client, for servers without CIMD or DCR
    oauth_client_secret: str = field(default="", repr=False)
    oauth_scopes: str = ""
    server_id: int = field(default=0, compare=False)  # the row, for what the gateway records
    fingerprint: str = field(default="", compare=False)

    def allows(self, tool_name: str) -> bool:
        return "*" in self.tool_filters or tool_name in self.tool_filters

    @property
    def is_stdio(self) -> bool:
        return self.transport == "stdio"

    @property
    def per_person(self) -> bool:
        """Each caller signs in as themself: connections are never shared between people."""
        return self.auth == "oauth_person"

    @property
    def signs_in(self) -> bool:
        return self.auth in ("oauth_person", "oauth_shared", "client_credentials")


@dataclass(frozen=True, slots=True)
class ToolboxConfig:
    name: str
    description: str
    servers: tuple[ServerConfig, ...]
    offered_alone: bool = True  # served at /mcp/t/<slug>/toolboxes/<name> too

    def server(self, name: str) -> ServerConfig | None:
        return next((server for server in self.servers if server.name == name), None)


@dataclass(frozen=True, slots=True)
class TenantConfig:
    tenant_id: int
    slug: str
    active: bool
    version: int
    toolboxes: tuple[ToolboxConfig, ...]
    max_connections: int | None = None  # None: the gateway's default
    policy: Policy = NO_POLICY  # who may call which tool (kernel.tool_policy)
    guard_secrets: bool = False  # credentials out of tool results (metatools.secret_guard)

    def toolbox(self, name: str) -> ToolboxConfig | None:
        return next((toolbox for toolbox in self.toolboxes if toolbox.name == name), None)


def fingerprint(server: ServerConfig) -> str:
    """Identifies what a connection was made from; any edit of these fields changes it."""
    material = [
        server.transport,
        server.command,
        server.args,
        server.env,
        server.cwd,
        server.url,
        server.headers,
        server.sandbox.material(),
    ]
    if server.signs_in:  # left out otherwise: fingerprints made before sign-in stay the same
        material += [server.auth, server.oauth_client_id, server.oauth_scopes]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()[:16]
