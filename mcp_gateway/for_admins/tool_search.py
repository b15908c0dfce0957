"""What a model would find for a query (the admin's search box and the API's tool search):
`search_tools` as a credential with every toolbox of the tenant (or one toolbox) would ask
it, answered from what the database holds of each server's tools, so that an admin can see
which description hides a tool.

The tools are each enabled server's last listing (an admin's check or a gateway connect
that succeeded), filtered and checked against their pins by the gateway's own snapshot
(`server.allows`, `kernel.pins`), exactly as `open_toolbox` lists them; the ranking is
the search room's (`ToolIndex`, `tool_document`). A server whose last check failed, or
that was never listed, is not searched, and said. Synchronous: admin views are. The index
is built for each search (about 100 ms for 500 tools): an admin's page, not a model's hot
path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_gateway.database.reads import last_listings, load_tenant
from mcp_gateway.search.index import SearchHit, ServerTools, ToolIndex

NEVER_LISTED = "never listed"
CHECK_FAILED = "its last check failed"


@dataclass(frozen=True, slots=True)
class FoundTool:
    """One tool found: `entry` is its tool entry as `open_toolbox` lists it."""

    rank: int
    score: float
    server_id: int
    entry: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.entry["name"])

    @property
    def server(self) -> str:
        return str(self.entry["server"])

    @property
    def toolbox(self) -> str:
        return str(self.entry["toolbox"])

    @property
    def description(self) -> str:
        return str(self.entry.get("description") or "")


@dataclass(frozen=True, slots=True)
class NotSearched:
    """An enabled server whose tools are not known: why (`NEVER_LISTED`, `CHECK_FAILED`)."""

    toolbox: str
    server: str
    server_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class ToolSearch:
    query: str
    tools: tuple[FoundTool, ...]
    not_searched: tuple[NotSearched, ...]


def find_tools(
    tenant_id: int, query: str, toolbox: str | None = None, limit: int = 10
) -> ToolSearch | None:
    """The best `limit` tools of the tenant (or of its toolbox `toolbox`) for `query`, best
    first; None when there is no such tenant or toolbox. A blank query finds nothing."""
    # Imported here: the admin imports the face, and the SDK (a second of start-up) is
    # loaded by the first search instead of by every manage.py command. The index's own
    # rules (`known_tools`): what a client may see of a listing, how a server is described.
    from mcp_gateway.metatools.known_tools import Listing, described, visible_entries

    tenant = load_tenant(tenant_id, 0)
    if tenant is None:
        return None
    toolboxes = [box for box in tenant.toolboxes if toolbox is None or box.name == toolbox]
    if toolbox is not None and not toolboxes:
        return None
    listings = last_listings(tenant_id)
    searched: list[ServerTools] = []
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    not_searched: list[NotSearched] = []
    for box in toolboxes:
        for server in box.servers:
            ok, definitions = listings.get(server.server_id, (None, []))
            if ok is not True:
                reason = CHECK_FAILED if ok is False else NEVER_LISTED
                not_searched.append(NotSearched(box.name, server.name, server.server_id, reason))
                continue
            key = str(server.server_id)
            listed = list(visible_entries(Listing.stored(definitions), server, box).values())
            entries.update(((key, entry["name"]), entry) for entry in listed)
            searched.append((key, *described(server, box), listed))
    hits = _ranked(searched, query, limit)
    found = tuple(
        FoundTool(rank, hit.score, int(hit.server_key), entries[hit.server_key, hit.tool])
        for rank, hit in enumerate(hits, start=1)
    )
    return ToolSearch(query, found, tuple(not_searched))


def _ranked(searched: list[ServerTools], query: str, limit: int) -> list[SearchHit]:
    if not query.strip() or not searched:
        return []
    index = ToolIndex()
    index.replace_servers(searched)
    return index.search(query, [key for key, *_ in searched], limit)
