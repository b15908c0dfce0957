"""A call on the toolbox endpoint relays its tool's progress to the calling client, as
use_tool does (the request answered as an SSE stream by the endpoint's own SDK manager),
on both protocol generations."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.results import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("toolbox_endpoint_progress")]

STEPS = [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    acme = make_tenant_setup("acme")
    acme.fixture_server(acme.toolbox("dev"), "files")
    return acme


@pytest.fixture
def acme(world) -> TenantSetup:
    return world.new_key()


@pytest.fixture
def dev(module_gateway) -> LiveGateway:
    return replace(module_gateway, url=module_gateway.url.rstrip("/") + "/t/acme/toolboxes/dev")


async def test_progress_reaches_a_2025_client(dev, acme):
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total, message))

    async with dev.session(acme.key) as session:
        result = await session.call_tool("files__progress", {}, progress_callback=on_progress)
    assert text_of(result) == "done"
    assert updates == STEPS


async def test_progress_reaches_a_2026_client(dev, acme):
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total, message))

    async with dev.client(acme.key) as client:
        result = await client.call_tool("files__progress", {}, progress_callback=on_progress)
    assert text_of(result) == "done"
    assert updates == STEPS
