"""What the toolbox endpoint leaves out of a toolbox, and why (the admin's toolbox page):
a tool whose `<server>__<tool>` name would pass the length clients take, or would be
another tool's name too, is not offered there (`metatools.toolbox_members`), though
`open_toolbox` and `use_tool` still reach it. Read from each server's last listing,
filters and approval holds applied as a client sees them (`known_tools`).
"""

from __future__ import annotations

from mcp_gateway.database.reads import last_listings, load_tenant


def endpoint_left_out(tenant_id: int, toolbox: str) -> list[str]:
    """One line per tool of the toolbox that its endpoint does not offer, with the reason;
    [] for no such toolbox."""
    # Imported here: the admin imports the face, and the SDK (a second of start-up) is
    # loaded by the first page that asks instead of by every manage.py command.
    from mcp_gateway.metatools.known_tools import Listing, visible_entries
    from mcp_gateway.metatools.toolbox_members import left_out, prefixed

    tenant = load_tenant(tenant_id, 0)
    found = tenant.toolbox(toolbox) if tenant is not None else None
    if found is None:
        return []
    listings = last_listings(tenant_id)
    named: list[tuple[str, tuple[str, str]]] = []
    for server in found.servers:
        ok, definitions = listings.get(server.server_id, (None, []))
        if ok is not True:
            continue
        for name in visible_entries(Listing.stored(definitions), server, found):
            named.append((prefixed(server.name, name), (server.name, name)))
    refused = left_out(named)
    return [
        f"Tool '{tool}' in server '{server}' is not offered by the toolbox endpoint: "
        f"its name there, '{name}', is {refused[name]}."
        for name, (server, tool) in named
        if name in refused
    ]
