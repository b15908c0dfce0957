"""What an admin is told of a failed connect beyond the client's phrase: the cause, and what
to change (issue 37). Recorded with the server's last check and shown on its admin page
and in the API's check result; never sent to a client, whose phrase stays the classified
one (`failures`).

The cause says what happened in the log's words (the server's secret values redacted),
then, when the failure is one an admin can act on, what to change: an address the egress
policy refuses and the setting that allows it; a command not found, by name; a stdio
server that never answered while its sandbox's network refuses its package registry (a
cold `npx -y` or `uvx` downloads before it answers initialize); then the end of its stderr.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Mapping
from urllib.parse import urlsplit

import anyio

from kernel.classified import ClassifiedFailure
from kernel.egress import (
    EgressPolicy,
    EgressRefused,
    IPAddress,
    refused_kind,
    resolve,
)
from mcp_gateway.downstream import failures
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.options import current_options
from mcp_gateway.snapshots.servers import ServerConfig

MAX_CAUSE = 2000  # characters kept with the server's last check
TAIL_LINES = 5  # the stderr lines a cause ends with
RESOLVE_SECONDS = 3.0  # a registry's name resolved, at the most
RESTART = "then restart the gateway: it reads its settings when it starts"
PHASES = {"start": "while starting", "initialize": "at initialize", "list": "listing its tools"}
REFUSAL = re.compile(r"egress refused: (?P<host>\S+) resolves to (?P<ip>\S+) \((?P<kind>[^)]+)\)")


class Registry:
    """Where a package runner downloads from: its name, the variables that move it, and
    the host names it reaches by default."""

    def __init__(self, name: str, variables: tuple[str, ...], hosts: tuple[str, ...]) -> None:
        self.name, self.variables, self.hosts = name, variables, hosts

    def hosts_for(self, env: Mapping[str, str]) -> tuple[str, ...]:
        """The registry's host names for a server of this env (its own setting first)."""
        for variable in self.variables:
            value = env.get(variable, "")
            host = urlsplit(value).hostname if "${" not in value else None
            if host:
                return (host,)
        return self.hosts


NPM = Registry(
    "npm's registry", ("npm_config_registry", "NPM_CONFIG_REGISTRY"), ("registry.npmjs.org",)
)
PYPI = Registry(
    "the Python package index",
    ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"),
    ("pypi.org", "files.pythonhosted.org"),
)
RUNNERS = {
    "npx": NPM,
    "npm": NPM,
    "pnpm": NPM,
    "yarn": NPM,
    "bunx": NPM,
    "uvx": PYPI,
    "uv": PYPI,
    "pipx": PYPI,
    "pip": PYPI,
}


async def explain(server: ServerConfig, story: failures.Story) -> str:
    """The admin's cause of `story` (several lines), at most MAX_CAUSE characters."""
    lines = [_what_happened(story.detail)]
    lines += await _what_to_change(server, story)
    tail = [line for line in story.stderr_tail if line.strip()][-TAIL_LINES:]
    if tail:
        lines.append("stderr (its last lines): " + " | ".join(tail))
    elif server.is_stdio:
        lines.append("The server wrote nothing to stderr.")
    return "\n".join(lines)[:MAX_CAUSE]


def _what_happened(detail: str) -> str:
    """The log's detail, its phase said in words ("start: X" -> "X (while starting)")."""
    phase, _, rest = detail.partition(": ")
    if phase in PHASES and rest:
        return f"{rest} ({PHASES[phase]})"
    return detail


async def _what_to_change(server: ServerConfig, story: failures.Story) -> list[str]:
    error = story.error
    if isinstance(error, EgressRefused):
        return [_egress_refused(server, story.detail)]
    if story.phrase == failures.COMMAND_NOT_FOUND:
        return [_command_not_found(server)]
    if isinstance(error, TimeoutError) and server.is_stdio:
        return await _silent_stdio(server)
    return []


def _egress_refused(server: ServerConfig, detail: str) -> str:
    found = REFUSAL.search(detail)
    if found is None:  # a refusal said otherwise: the URL's host is what to allow
        host = urlsplit(server.url).hostname or "the server's host"
        return (
            "The egress policy refuses this address: remote servers reach public addresses "
            f"only. WORKBENCH_EGRESS_ALLOW={host} allows it; {RESTART}."
        )
    host, ip, kind = found.group("host"), found.group("ip"), found.group("kind")
    network = _network_of(ip)
    allow = (
        f"WORKBENCH_EGRESS_ALLOW={network}"
        if host.strip("[]") == ip
        else f"WORKBENCH_EGRESS_ALLOW={host} (the name) or {network} (its address)"
    )
    return (
        f"The egress policy refuses {kind} addresses: remote servers reach public addresses "
        f"only. {allow} allows it; {RESTART}."
    )


def _network_of(ip: str) -> str:
    return f"{ip}/128" if ":" in ip else f"{ip}/32"


def _command_not_found(server: ServerConfig) -> str:
    env = dict(server.env)
    path = env.get("PATH") or os.environ.get("PATH", "")
    return (
        f"The command {server.command!r} was not found: it is not on the PATH the server is "
        f"given ({path}). Install it on the gateway's host, or give its full path."
    )


async def _silent_stdio(server: ServerConfig) -> list[str]:
    """A stdio server that never answered: its package registry, when the sandbox's
    network refuses it, is said by name with the setting that allows it."""
    if not (server.sandbox.network and SandboxPolicy.from_settings().enabled):
        return []
    registry = RUNNERS.get(os.path.basename(server.command))
    if registry is None:
        return [
            "Its sandbox's network is filtered by the egress policy: if the server reaches "
            "a private or reserved address at start, allow it in the server's network "
            f"allowance or in WORKBENCH_SANDBOX_EGRESS_ALLOW ({RESTART})."
        ]
    allowed = current_options().sandbox_egress_allow
    policy = EgressPolicy([*allowed, *server.sandbox.egress_allow])
    refused = [line async for line in _refused_hosts(registry, dict(server.env), policy)]
    if refused:
        return refused
    return [
        f"{server.command} downloads the server from {registry.name} before it answers: "
        "a first start can take longer than the connect timeout "
        "(WORKBENCH_CONNECT_TIMEOUT_SECONDS)."
    ]


async def _refused_hosts(
    registry: Registry, env: Mapping[str, str], policy: EgressPolicy
) -> AsyncIterator[str]:
    for host in registry.hosts_for(env):
        if host.lower() in policy.hosts:
            continue
        addresses: list[IPAddress] = []
        with anyio.move_on_after(RESOLVE_SECONDS):
            try:
                addresses = await resolve(host, 443)
            except ClassifiedFailure:
                addresses = []
        for ip in addresses:
            if ip.is_loopback:  # never opened to a sandbox by an allowance (issue 31)
                yield (
                    f"{registry.name} ({host}) resolves to {ip} (loopback): a sandbox reaches "
                    "the host's loopback only at the host ports an operator names on the "
                    "server (host ports, as 10.0.2.2:PORT), so the server cannot download "
                    "itself from there. Point it at the registry's port through host ports, "
                    "or at an address the sandbox may reach."
                )
                break
            if not policy.allows_address(ip):
                yield (
                    f"{registry.name} ({host}) resolves to {ip} ({refused_kind(ip)}), "
                    "which the sandbox's network refuses, so the server cannot download "
                    f"itself. WORKBENCH_SANDBOX_EGRESS_ALLOW={host} allows it ({RESTART}), "
                    f"or {host} in this server's network allowance."
                )
                break
