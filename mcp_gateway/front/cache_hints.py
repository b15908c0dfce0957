"""The caching hints of the gateway's own lists (2026-07-28, SEP-2549): each list result's
`ttlMs` and `cacheScope`, filled by the SDK (`Server(cache_hints=...)`) on every answer to a
2026-07-28 client; the 2025-11-25 schema has no such fields, so those clients get none.

Scoped `private`: what a list holds depends on the credential (its toolboxes, filters,
policies, pins), so no shared cache may hand one caller's answer to another. `server/discover`
keeps the SDK's default (`private`, not reused: its instructions name the caller's
toolboxes, which an admin's edit changes at once).
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp.server import CacheHint
from mcp.server.caching import CacheableMethod

# `/mcp/t/<slug>`'s tools are the three meta-tools, the same until the gateway is upgraded.
META_TOOLS_TTL_MS = 3_600_000
# A toolbox's lists follow its admins' edits (servers, filters, policies, pins) and its
# servers' own changes: a client may reuse one for a minute. Every call is checked again
# whatever the client kept, so a stale list hides or shows a name, never grants a call.
TOOLBOX_LISTS_TTL_MS = 60_000

META_TOOL_HINTS: Mapping[CacheableMethod, CacheHint] = {
    "tools/list": CacheHint(ttl_ms=META_TOOLS_TTL_MS, scope="private"),
}
TOOLBOX_HINTS: Mapping[CacheableMethod, CacheHint] = {
    method: CacheHint(ttl_ms=TOOLBOX_LISTS_TTL_MS, scope="private")
    for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list")
}
