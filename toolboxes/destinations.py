"""Where a server's secrets go, and the rule that a stored secret is kept only while that
stays the same: a secret never follows a server to a new destination.

A raw server's destination is its transport, command, args and URL. A catalog-made
server's is its entry and, as the entry fills it in, its URL: a parameter that moves the
URL (`https://{{host}}/mcp`) moves the secrets sent there. Parameters that fill its args
do not count: the program stays the entry's, which the operator vetted with its
parameters (a city or a directory changed must not ask for the API key again; a
parameter that would point a program elsewhere belongs in `choices`). The API, the
configuration document and the admin's form keep a stored secret value when asked to (a
`null`, a map left out, the mask, a secret parameter left empty) only if the destination
after the change is the one before; otherwise the value must be typed again.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolboxes.launch import launch_of
from toolboxes.models import Server

TYPE_AGAIN = (
    "must be typed again: a stored secret is not kept across a change of the server's {what}"
)
# What the messages call each part of a destination.
PARTS = (("transport", "transport"), ("command", "command"), ("args", "args"), ("url", "URL"))


@dataclass(frozen=True, slots=True)
class Destination:
    catalog_entry_id: int | None
    transport: str
    command: str
    args: tuple[str, ...]
    url: str


def destination_of(server: Server) -> Destination:
    launch = launch_of(server)
    args = tuple(launch.args) if server.catalog_entry_id is None else ()
    return Destination(server.catalog_entry_id, launch.transport, launch.command, args, launch.url)


def moved(before: Destination | None, after: Destination) -> str:
    """What of the destination changed, as a message names it ("" when nothing did, or the
    server is new): a new entry is said alone, what else changed with it follows from it."""
    if before is None:
        return ""
    if before.catalog_entry_id != after.catalog_entry_id:
        return "catalog entry"
    return ", ".join(
        label for part, label in PARTS if getattr(before, part) != getattr(after, part)
    )


def type_again(what: str) -> str:
    """The message for a secret value kept across a change of `what` (`moved`)."""
    return TYPE_AGAIN.format(what=what)
