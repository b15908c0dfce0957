"""A tenant's package cache, end to end through /mcp: what one spawn of a sandboxed server
leaves in ~/.npm and ~/.cache, the next spawn finds (so `npx -y` and `uvx` download once);
another tenant's server finds none of it."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from mcp_gateway.downstream.sandbox import cache as sandbox_cache
from mcp_gateway.downstream.sandbox.cache import CachePolicy
from tests.harness.live import TenantSetup
from tests.harness.results import error_of, payload, text_of, use

# Between the gateway and its downstream servers (processes, mounts): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

CACHE_SERVER = str(Path(__file__).resolve().parents[1] / "servers" / "cache_server.py")


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[str]:
    """A cache directory of this test's own, its volumes unmounted after it."""
    directory = str(tmp_path / "cache")
    sandbox_cache.configure(CachePolicy(directory, 64))
    yield directory
    sandbox_cache.configure(None)
    sandbox_cache.release(directory)


@pytest.fixture
def keepers(make_setup) -> tuple[TenantSetup, TenantSetup]:
    """Two tenants, each with the cache server in its toolbox `dev`."""
    setups = make_setup("cache-a"), make_setup("cache-b")
    for setup in setups:
        server = setup.toolbox("dev").servers.create(
            name="keeper", command=sys.executable, args=[CACHE_SERVER]
        )
        server.full_clean()
    return setups


async def visit(session) -> dict:
    return json.loads(text_of(await session.call_tool("use_tool", use("dev", "keeper", "visit"))))


async def test_a_second_spawn_finds_what_the_first_left_in_its_tenants_cache(
    live_gateway, cache, keepers
):
    a, b = keepers
    async with live_gateway.session(a.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        first = await visit(session)
        ended = await session.call_tool("use_tool", use("dev", "keeper", "exit"))
        assert error_of(ended) == (
            "DOWNSTREAM_ERROR",
            "Error executing tool 'exit' in server 'keeper' (toolbox 'dev'): "
            "the server connection closed",
        )
        second = await visit(session)  # a new process: the server was spawned again
    uid = settings.WORKBENCH_SANDBOX_UID_BASE + a.tenant.pk
    assert first["uid"] == second["uid"] == uid
    assert second["mark"] != first["mark"]
    for name in (".npm", ".cache"):
        assert first[name] == {"before": [], "owner": uid, "mode": "0o700"}
        assert second[name] == {"before": [first["mark"]], "owner": uid, "mode": "0o700"}
    async with live_gateway.session(b.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        other = await visit(session)
    assert other[".npm"]["before"] == other[".cache"]["before"] == []
    assert other[".npm"]["owner"] == settings.WORKBENCH_SANDBOX_UID_BASE + b.tenant.pk
