"""A sandboxed server's memory, end to end through /mcp (issue 20): writing 1 GiB to /tmp
and to HOME stops at the tmpfs bound (ENOSPC at WORKBENCH_SANDBOX_TMP_MB each), and
shared memory (`MAP_SHARED`, which no rlimit counts) touched past the server's memory
limit stops the server with the memory-limit reason; the host's shared memory grows by no
more than the bounds. One gateway and one tenant for the module; two sandboxes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from mcp_gateway.downstream.sandbox.memory import MemoryGroup
from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.waits import eventually

# Between the gateway and its downstream servers (processes, memory): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg, pytest.mark.xdist_group("sandbox_mem")]

MEMORY_MB = 128
ASKED_MB = 1024
# Other processes of the machine (other tests) may add shared memory meanwhile: a little
# more than the bounds is allowed, far less than what an unbounded write would add.
SLACK_MB = 48


def cgroups_unusable() -> str | None:
    group = MemoryGroup.create(MEMORY_MB * 1024 * 1024)
    if group is None:
        return "memory cgroups cannot be written here (the gateway then bounds no shmem)"
    group.remove()
    return None


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    reason = cgroups_unusable()
    if reason:
        pytest.skip(reason)
    setup = make_tenant_setup("mem")
    setup.hostile_server("tmp")
    setup.hostile_server("shm", memory_limit_mb=MEMORY_MB)
    return setup


@pytest.fixture
def live_gateway(module_gateway) -> LiveGateway:
    return module_gateway


@pytest.fixture
def key(world) -> Iterator[str]:
    """The module's tenant, with a key no other test used."""
    yield world.new_key().key


def shmem_mib() -> float:
    """The host's shared memory (tmpfs and shared anonymous pages), in MiB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no Shmem in /proc/meminfo")


async def test_writing_a_gib_to_tmp_and_home_stops_at_the_tmpfs_bound(live_gateway, key):
    bound = settings.WORKBENCH_SANDBOX_TMP_MB
    async with live_gateway.session(key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "tmp"}))
        before = shmem_mib()
        result = await session.call_tool(
            "use_tool", use("tmp", "hostile", "fill", {"mib": ASKED_MB})
        )
        grown = shmem_mib() - before  # the files are still there: the server holds them
    assert not result.is_error, text_of(result)
    stopped = {"written_mib": float(bound), "stopped": "ENOSPC: No space left on device"}
    assert json.loads(text_of(result)) == {"/tmp": stopped, "HOME": stopped}
    print(f"shared memory grew by {grown:.0f} MiB")  # with -s
    # Host-wide, so other tests' processes add to it (201 MiB was seen against 2 x 64 in a
    # loaded run): what it must show is that far less than the 2 x 1 GiB asked was kept.
    assert grown < ASKED_MB, f"shared memory grew by {grown:.0f} MiB"


async def test_shared_memory_past_the_limit_stops_the_server_with_the_memory_reason(
    live_gateway, key
):
    before = shmem_mib()
    async with live_gateway.session(key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "shm"}))
        result = await session.call_tool(
            "use_tool", use("shm", "hostile", "map", {"mib": 2 * MEMORY_MB})
        )
    assert error_of(result) == (
        "DOWNSTREAM_ERROR",
        "Error executing tool 'map' in server 'hostile' (toolbox 'shm'): "
        f"the server was stopped by its memory limit ({MEMORY_MB} MiB)",
    )
    # The killed server's pages go with it, a moment after its exit is reported (the
    # kernel releases the last reference to a shared mapping asynchronously).
    await eventually(
        lambda: shmem_mib() - before <= SLACK_MB, 10, "the killed server's shared memory to go"
    )
