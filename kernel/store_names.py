"""How the shared store is named, for every process that uses it: the prefix of the entries
that name one database's rows, and which store a process uses (`describe_store`). The
gateway's backends (`mcp_gateway.store`) write under these names; the admins' world reads
and bumps the same entries (`toolboxes.versions`) and compares stores (one store per
deployment: `toolboxes.system_checks`).
"""

from __future__ import annotations

import os
import re
import socket
from typing import Any
from urllib.parse import urlsplit

# Every entry's name begins with this; see installation_prefix.
PREFIX = "wb"
# The embedded store's Django cache backend (the gateway's `store.backends` defines it).
EMBEDDED_BACKEND = "mcp_gateway.store.backends.EmbeddedCache"


def installation_prefix(installation: str) -> str:
    """The prefix of the entries that name one database's rows: a store that outlives its
    database, or is shared by two, never hands one database's state to another's rows."""
    return f"{PREFIX}:{installation}"


def describe_store(cache_settings: dict[str, Any]) -> str:
    """Which shared store a process uses, for recording and comparing (issue 23: a command
    pointed at another store than the gateways' writes where no gateway reads) and for an
    operator's eyes: never a password. The embedded store is one machine's directory."""
    url = redis_url(cache_settings)
    if url:
        return redis_location(url)
    if cache_settings.get("BACKEND") == EMBEDDED_BACKEND:
        directory = os.path.realpath(cache_settings["LOCATION"])
        return f"embedded store {socket.gethostname()}:{directory}"
    return f"{cache_settings.get('BACKEND', '')} (this process only)"


def redis_location(url: str) -> str:
    """A Redis URL as the operator's log may show it: no password."""
    parts = urlsplit(url)
    return f"redis {parts.hostname}:{parts.port or 6379}{parts.path or '/0'}"


def redis_url(cache_settings: dict[str, Any]) -> str | None:
    """The (first, written-to) Redis server of a Django cache setting, if it is Redis."""
    if not cache_settings.get("BACKEND", "").endswith("RedisCache"):
        return None
    location = cache_settings["LOCATION"]
    servers = re.split("[;,]", location) if isinstance(location, str) else location
    return servers[0]
