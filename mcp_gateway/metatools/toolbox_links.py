"""The URIs a tool result handed a credential on the toolbox endpoint (its resource links
and embedded resources), each with the server that returned it: a later `resources/read`
of one goes to that server, from any process (the shared store), for the idle time of an
open toolbox. A URI is the credential's: another key reading it finds nothing here."""

from __future__ import annotations

import hashlib

import mcp_types as types

from mcp_gateway.store.shared import SharedStore

MAX_LINKS = 100  # the URIs of one result that are remembered


def result_uris(result: types.CallToolResult) -> list[str]:
    """The URIs of a result's resource links and embedded resources, in its order."""
    uris: list[str] = []
    for item in result.content:
        if isinstance(item, types.ResourceLink):
            uris.append(str(item.uri))
        elif isinstance(item, types.EmbeddedResource):
            uris.append(str(item.resource.uri))
    return list(dict.fromkeys(uris))[:MAX_LINKS]


class ResultLinks:
    def __init__(self, store: SharedStore, prefix: str, idle_seconds: float) -> None:
        self.store = store
        self.prefix = prefix  # the gateway's installation's (`store.installation_prefix`)
        self.idle_seconds = idle_seconds

    def _entry(self, owner: str, toolbox: str, uri: str) -> str:
        digest = hashlib.sha256(uri.encode()).hexdigest()[:32]
        return f"{self.prefix}:link:{owner}:{toolbox}:{digest}"

    async def remember(
        self, owner: str, toolbox: str, server: str, result: types.CallToolResult
    ) -> None:
        for uri in result_uris(result):
            await self.store.set(self._entry(owner, toolbox, uri), server, self.idle_seconds)

    async def server_of(self, owner: str, toolbox: str, uri: str) -> str | None:
        server = await self.store.get(self._entry(owner, toolbox, uri))
        return server if isinstance(server, str) else None
