"""The shared store failing, said once at its boundary: the client is told a short
reason and an incident id; the operator's log gets the store's own error under that id.

Redis' error texts name the store's address (`Error 111 connecting to 127.0.0.1:6379`):
an internal address a client must never see. Every store call that can fail (the shared
store's reads and writes, the rate buckets) runs inside `guard`, which turns the store's
errors into `StoreUnavailable`, whose text is the short reason alone.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from kernel.incidents import new_incident_id

try:  # the optional `redis` extra
    from redis.exceptions import RedisError
except ImportError:  # pragma: no cover - installed without the extra

    class RedisError(Exception):  # type: ignore[no-redef]  # never raised without redis
        pass


logger = logging.getLogger("workbench.incident")

STORE_UNAVAILABLE = "the gateway's shared store is unavailable: retry shortly (incident {incident})"
# What a client may wait before retrying: about one health check of a load balancer.
RETRY_AFTER_SECONDS = 2
# The store's own errors: Redis' (connection, timeout, protocol), the embedded store's.
STORE_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError, sqlite3.Error)


class StoreUnavailable(Exception):
    """The shared store could not be used; `str()` is what a client may be told."""

    def __init__(self, incident: str) -> None:
        super().__init__(STORE_UNAVAILABLE.format(incident=incident))
        self.incident = incident


@contextmanager
def guard(action: str, where: str) -> Iterator[None]:
    """Run one store call; its failure is logged once with an incident id and raised as
    StoreUnavailable (`action` names what was tried and `where` the store, for the log)."""
    try:
        yield
    except STORE_ERRORS as exc:
        incident = new_incident_id()
        logger.error(
            "incident %s [store] the shared store is unavailable (%s, %s): %s: %s",
            incident,
            action,
            where,
            type(exc).__name__,
            exc,
            extra={"incident": incident},
        )
        raise StoreUnavailable(incident) from exc
