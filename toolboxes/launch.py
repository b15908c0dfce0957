"""What a server runs and where: its own fields, or, for a server made from a catalog
entry, the entry's with the server's parameter values filled in (`{{param}}`,
`toolboxes.placeholders`). Worked out each time, so an edit of an entry reaches every
server made from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolboxes.models import Server, SignInSettings
from toolboxes.placeholders import fill, substitute

SANDBOX_FIELDS = (
    "mounts",
    "network",
    "memory_limit_mb",
    "process_limit",
    "cpu_limit_seconds",
    "open_files_limit",
    "egress_allow",
    "host_ports",
)


@dataclass(frozen=True, slots=True)
class ServerLaunch:
    """What a server runs and where: its own fields, or its entry's with values filled in."""

    transport: str
    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    url: str
    headers: dict[str, str]
    mounts: list[dict[str, Any]]
    network: bool
    memory_limit_mb: int | None
    process_limit: int | None
    cpu_limit_seconds: int | None
    open_files_limit: int | None
    egress_allow: list[str]
    host_ports: list[str]
    # How the gateway signs in (toolboxes.models.sign_in): the server's, or its entry's.
    auth: str = "none"
    oauth_client: dict[str, str] = field(default_factory=dict, repr=False)
    oauth_scopes: str = ""


def launch_of(server: Server) -> ServerLaunch:
    entry = server.catalog_entry if server.catalog_entry_id is not None else None
    if entry is None:
        return ServerLaunch(
            server.transport,
            server.command,
            list(server.args),
            dict(server.env),
            server.cwd,
            server.url,
            dict(server.headers),
            *(getattr(server, name) for name in SANDBOX_FIELDS),
            **sign_in_of(server),
        )
    values = server.catalog_values()
    args = [filled for arg in entry.args if (filled := fill(arg, values)) is not None]

    def fill_map(items: dict[str, str]) -> dict[str, str]:
        return {
            name: filled
            for name, value in items.items()
            if (filled := fill(value, values)) is not None
        }

    return ServerLaunch(
        entry.transport,
        entry.command,
        args,
        fill_map(entry.env),
        entry.cwd,
        substitute(entry.url, values),
        fill_map(entry.headers),
        *(getattr(entry, name) for name in SANDBOX_FIELDS),
        **sign_in_of(entry),
    )


def sign_in_of(settings: SignInSettings) -> dict[str, Any]:
    return {
        "auth": str(settings.auth),
        "oauth_client": settings.oauth_client_values(),
        "oauth_scopes": settings.oauth_scopes,
    }
