"""A replica's warm-up: after a restart, the servers it was running start again before it
says it is ready, so that its tenants' first calls do not wait for them (issue 23).

The shipped load balancers hash each tenant onto one replica by the replica's name there
(HAProxy's `server r1`, a StatefulSet's pod): the same tenants come back to a restarted
replica. A replica told that name (WORKBENCH_REPLICA) remembers in the shared store which
servers its pool runs (tenant, toolbox, server: each worker adds its own, an entry unseen
for an idle connection's lifetime is forgotten) and, when it starts, connects them again,
WARM_UP_CONCURRENCY at a time, for at most WORKBENCH_WARM_UP_SECONDS; meanwhile `/readyz`
answers 503 `warming`, so the load balancer waits (the README's "Several replicas").

Servers someone signs in to are not warmed: a person's account needs its person, and a
vendor's token is not fetched for nobody's call.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from mcp_gateway.downstream.pool import Pool, PoolKey
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef, TenantConfig
from mcp_gateway.store.failure import StoreUnavailable
from mcp_gateway.store.shared import SharedStore

logger = logging.getLogger("workbench.pool")

# How often a worker looks whether its pool runs servers it has not remembered yet, and
# how often it refreshes what it has (so entries of a busy replica never age out).
CHANGE_CHECK_SECONDS = 1.0
REFRESH_SECONDS = 60.0
WARM_UP_CONCURRENCY = 4  # server starts at once: each costs a core for a moment
# Set while this process warms up: /readyz answers 503 `warming` (workbench_site.health).
warming = threading.Event()

Place = tuple[int, str, str]  # tenant id, toolbox, server


@dataclass
class WarmUp:
    pool: Pool
    shared: SharedStore
    tenant: Callable[[int], Awaitable[TenantConfig | None]]
    replica: str  # the load balancer's name for this replica; empty: no warm-up
    seconds: float  # the bound on a warm-up; 0: remember, never warm
    memory_seconds: float  # how long an entry unseen is remembered
    prefix: str = ""  # the installation's, set at the gateway's start
    _remembered: frozenset[Place] = field(default=frozenset(), init=False)
    _refreshed: float = field(default=0.0, init=False)

    @property
    def key(self) -> str:
        return f"{self.prefix}warm:{self.replica}"

    async def run(self) -> None:
        """Warm up once, then remember what the pool runs, for as long as the gateway runs."""
        if not self.replica:
            return
        if self.seconds > 0:
            await self.warm()
        while True:
            await anyio.sleep(CHANGE_CHECK_SECONDS)
            await self.remember()

    def places(self) -> frozenset[Place]:
        """The servers this process's pool runs for no one in particular."""
        return frozenset(
            (key.tenant_id, key.toolbox, key.server)
            for key in self.pool.running_keys()
            if key.person is None
        )

    async def remember(self) -> None:
        """Add this worker's servers to the replica's entry when they changed (and every
        REFRESH_SECONDS); entries unseen for `memory_seconds` are dropped."""
        places = self.places()
        now = time.time()
        if not places or (places <= self._remembered and now - self._refreshed < REFRESH_SECONDS):
            return
        try:
            saved = await self.shared.get(self.key, {})
            kept = {
                place: seen
                for place, seen in (saved if isinstance(saved, dict) else {}).items()
                if isinstance(seen, int | float) and now - seen < self.memory_seconds
            }
            kept |= {json.dumps(place): now for place in places}
            await self.shared.set(self.key, kept, self.memory_seconds)
        except StoreUnavailable:  # logged with its incident; tried again at the next check
            return
        if not places <= self._remembered:
            logger.info(
                "warm-up: replica %s remembers %d server(s) to start at its next start",
                self.replica,
                len(kept),
            )
        self._remembered, self._refreshed = places, now

    async def warm(self) -> None:
        """Start the servers this replica ran, within the bound; then say ready."""
        warming.set()
        started = time.monotonic()
        done: list[Place] = []
        failed: list[str] = []
        places: list[Place] = []
        try:
            with anyio.move_on_after(self.seconds):
                places = await self._saved_places()
                limiter = anyio.CapacityLimiter(WARM_UP_CONCURRENCY)
                async with anyio.create_task_group() as tasks:
                    for place in places:
                        tasks.start_soon(self._start, place, limiter, done, failed)
        finally:
            warming.clear()
        if places:
            logger.info(
                "warm-up: replica %s started %d of %d server(s) in %.1f s%s",
                self.replica,
                len(done),
                len(places),
                time.monotonic() - started,
                f" (not started: {'; '.join(failed[:5])})" if failed else "",
            )

    async def _saved_places(self) -> list[Place]:
        try:
            saved = await self.shared.get(self.key, {})
        except StoreUnavailable:
            return []
        places = []
        for text in saved if isinstance(saved, dict) else {}:
            try:
                tenant_id, toolbox, server = json.loads(text)
                places.append((int(tenant_id), str(toolbox), str(server)))
            except (ValueError, TypeError):
                continue  # not an entry this module wrote: nothing to start
        return sorted(places)

    async def _start(
        self, place: Place, limiter: anyio.CapacityLimiter, done: list[Place], failed: list[str]
    ) -> None:
        tenant_id, toolbox_name, server_name = place
        try:
            tenant = await self.tenant(tenant_id)
            toolbox = tenant.toolbox(toolbox_name) if tenant and tenant.active else None
            server = toolbox.server(server_name) if toolbox else None
            if tenant is None or toolbox is None or not warmable(server):
                return  # gone since, or someone must sign in
            assert server is not None
            key = PoolKey(tenant_id, toolbox.name, server.name, server.fingerprint)
            ref = ServerRef(tenant.slug, toolbox.name, server.name)
            async with limiter:
                await self.pool.get(key, server, ref, tenant.max_connections)
            done.append(place)
        except Exception as exc:  # one server's failure is its own: the others still start
            failed.append(f"{toolbox_name}/{server_name}: {exc}"[:200])


def warmable(server: ServerConfig | None) -> bool:
    return server is not None and not server.signs_in
