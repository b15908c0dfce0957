"""The shared store keeps data, never code, and never outlives its database (issue 20).

1. Nothing read from the store is unpickled: a pickle planted under a key the gateway reads
   (by anyone who reaches Redis or the store's files) is refused as if the entry were
   missing, with a warning naming the key (never its content), and never executed.
2. Entries that name a database row (open toolboxes, configuration versions, rate buckets)
   are keyed by the database's installation too: a new database whose key 1 belongs to
   another tenant does not inherit what the old key 1 had open.
"""

from __future__ import annotations

import logging
import os
import pickle
import random
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from diskcache import FanoutCache
from django.conf import settings
from django.core.cache import cache

from tests.harness.deployment import Deployment
from tests.harness.live import TenantSetup
from tests.harness.markers import requires_redis
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.results import INITIALIZE_PARAMS, error_of, raw_rpc, use
from tests.harness.services import REDIS_URL
from toolboxes import versions

ECHO = use("dev", "fixture", "echo", {"text": "hi"})
NOT_OPEN = (
    "TOOLBOX_NOT_OPEN",
    "Error executing tool: Toolbox 'dev' is not open. Call open_toolbox first.",
)


class Plant:
    """A pickle that, when loaded, creates the file at `path`: what an attacker who can
    write the store would plant to run code in the gateway."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


def plant_in_embedded_store(key: str, path: Path) -> str:
    """Write a pickle under `key` as diskcache itself would (its default, pickling Disk),
    into the store directory the gateway reads; the stored key is returned."""
    params = settings.CACHES["default"]
    stored = cache.make_key(key)
    attacker = FanoutCache(params["LOCATION"], shards=params["SHARDS"])
    try:
        attacker.set(stored, Plant(path))
    finally:
        attacker.close()
    return stored


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "workbench.store"]


def refusal(stored_key: str) -> str:
    return (
        f"Refused the shared store's entry {stored_key!r}: its value is not JSON (read as missing)"
    )


@pytest.fixture
def acme(make_setup) -> TenantSetup:
    setup = make_setup("acme")
    setup.fixture_server(setup.toolbox("dev"), "fixture")
    return setup


@pytest.mark.anyio
async def test_a_pickle_planted_under_a_configuration_version_is_never_loaded(
    live_gateway, acme, tmp_path, caplog
):
    """The tenant's configuration version is read on every request, by the gateway's store
    and by Django's cache API (toolboxes/, accounts/): neither loads the pickle."""
    caplog.set_level(logging.WARNING, logger="workbench.store")
    marker = tmp_path / "pwned"
    key = await anyio.to_thread.run_sync(versions.version_key, acme.tenant.pk)
    stored = plant_in_embedded_store(key, marker)
    async with live_gateway.session(acme.key) as session:
        opened = await session.call_tool("open_toolbox", {"toolbox": "dev"})
        assert not opened.is_error
        echoed = await session.call_tool("use_tool", ECHO)
        assert not echoed.is_error
    assert not marker.exists()
    assert refusal(stored) in refusals(caplog)
    assert str(marker) not in caplog.text


@pytest.mark.anyio
async def test_a_pickle_planted_under_an_open_toolbox_is_read_as_not_open(
    live_gateway, acme, tmp_path, caplog
):
    caplog.set_level(logging.WARNING, logger="workbench.store")
    marker = tmp_path / "pwned"
    entry = live_gateway.gateway.open_toolboxes._entry(f"key:{acme.api_key.pk}", "dev")
    stored = plant_in_embedded_store(entry, marker)
    async with live_gateway.session(acme.key) as session:
        assert error_of(await session.call_tool("use_tool", ECHO)) == NOT_OPEN
        # Opening (which reads the entry too) writes a good one over it.
        assert not (await session.call_tool("open_toolbox", {"toolbox": "dev"})).is_error
        assert not (await session.call_tool("use_tool", ECHO)).is_error
    assert not marker.exists()
    assert refusals(caplog) == [refusal(stored)] * 2


# Gateways as processes on SQLite files of their own: run once (the SQLite pass).

SETUP = """
from toolboxes.models import ApiKey, Server, Tenant, Toolbox
from toolboxes.versions import version_key
tenant = Tenant.objects.create(slug={slug!r})
toolbox = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
Server.objects.create(toolbox=toolbox, name="fixture", command={python!r},
                      args=[{fixture!r}, "--prefix", {marker!r}])
api_key, key = ApiKey.issue(tenant)
print(api_key.pk, version_key(tenant.pk), key)
"""


def set_up(deployment: Deployment, slug: str, marker: str) -> tuple[int, str, str]:
    """A tenant with a toolbox 'dev' (a fixture server whose echo is prefixed with
    `marker`) and a key: (the key's row id, its tenant's version key, the key)."""
    script = SETUP.format(slug=slug, python=sys.executable, fixture=FIXTURE_SERVER, marker=marker)
    key_id, version_key, key = deployment.shell(script).split()[-3:]
    return int(key_id), version_key, key


async def call(http: httpx2.AsyncClient, url: str, key: str, name: str, arguments: dict) -> str:
    """One tools/call in a session of its own; the response's text."""
    init = await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS, key=key)
    assert init.status_code == 200, init.text
    params = {"name": name, "arguments": arguments}
    sid = init.headers["mcp-session-id"]
    return (await raw_rpc(http, url, "tools/call", params, key=key, session_id=sid)).text


@pytest.fixture
def deployments() -> Iterator[list[Deployment]]:
    made: list[Deployment] = []
    yield made
    for deployment in made:
        deployment.stop_all()


@pytest.mark.once
@requires_redis
def test_a_pickle_planted_in_redis_is_never_loaded(deployments, tmp_path):
    """What the review found: a tenant's server that reached Redis wrote a pickle under
    `:1:wb:tenant-version:<id>` and ran code as the gateway's user."""
    import redis

    url = f"{REDIS_URL}/{random.randint(1, 15)}"
    (tmp_path / "gw").mkdir()
    deployment = Deployment(tmp_path / "gw", cache_url=url)
    deployments.append(deployment)
    deployment.migrate()
    marker = uuid.uuid4().hex
    _, version_key, key = set_up(deployment, "acme", marker)
    stored = f":1:{version_key}"
    pwned = tmp_path / "pwned"
    redis.Redis.from_url(url).set(stored, pickle.dumps(Plant(pwned)))
    _, gateway_url, log = deployment.start_gateway("gateway")

    async def scenario() -> None:
        async with httpx2.AsyncClient(timeout=60) as http:
            opened = await call(http, gateway_url, key, "open_toolbox", {"toolbox": "dev"})
            assert '\\"servers_connected\\": 1' in opened
            echoed = await call(http, gateway_url, key, "use_tool", ECHO)
            assert f"{marker}hi" in echoed

    anyio.run(scenario)
    assert not pwned.exists()
    text = log.read_text()
    assert refusal(stored) in text
    assert str(pwned) not in text


@pytest.mark.once
def test_a_new_database_inherits_nothing_the_old_one_had_open(deployments, tmp_path):
    """The embedded store outlives its database: a database made anew (same store
    directory) numbers its keys from 1 again, for another tenant."""
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    old_dir.mkdir()
    new_dir.mkdir()
    store = {"WORKBENCH_STORE_DIR": str(old_dir / "store")}
    old = Deployment(old_dir, env_extra=store)
    new = Deployment(new_dir, env_extra=store)
    deployments.extend([old, new])
    old.migrate()
    old_id, _, old_key = set_up(old, "old-tenant", "old:")
    _, old_url, _ = old.start_gateway("old")

    async def open_on_old() -> None:
        async with httpx2.AsyncClient(timeout=60) as http:
            opened = await call(http, old_url, old_key, "open_toolbox", {"toolbox": "dev"})
            assert '\\"servers_connected\\": 1' in opened

    anyio.run(open_on_old)
    old.stop_all()

    new.migrate()
    new_id, _, new_key = set_up(new, "new-tenant", "new:")
    assert new_id == old_id  # the scenario: the same row id, another tenant's key
    _, new_url, _ = new.start_gateway("new")

    async def use_on_new() -> None:
        async with httpx2.AsyncClient(timeout=60) as http:
            used = await call(http, new_url, new_key, "use_tool", ECHO)
            assert NOT_OPEN[1] in used, used
            assert "new:hi" not in used

    anyio.run(use_on_new)
    assert os.path.isdir(old_dir / "store")
