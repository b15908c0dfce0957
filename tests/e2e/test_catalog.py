"""A server made from a catalog entry, end to end: a real client sees the entry's later
edits (the server's fingerprint changes, so its connection is replaced)."""

import sys
import uuid

import pytest
from asgiref.sync import sync_to_async

from tests.harness.paths import FIXTURE_SERVER
from tests.harness.procs import processes_with
from tests.harness.results import payload, text_of, use
from tests.harness.waits import wait_until
from toolboxes.models import CatalogEntry, CatalogParameter, Server

pytestmark = pytest.mark.anyio


@pytest.fixture
def catalog_setup(make_setup):
    """A tenant whose toolbox has one server made from a fixture-server entry; the entry's
    `--prefix` is a parameter the tenant filled in."""
    marker = uuid.uuid4().hex
    entry = CatalogEntry.objects.create(
        name="io.example/fixture",
        command=sys.executable,
        args=[FIXTURE_SERVER, "--prefix={{prefix}}"],
    )
    CatalogParameter.objects.create(entry=entry, name="prefix", required=True)
    setup = make_setup()
    server = Server(
        toolbox=setup.toolbox("dev"),
        name="fixture",
        catalog_entry=entry,
        parameters={"prefix": marker},
    )
    server.full_clean()
    server.save()
    return setup, entry, marker


async def test_an_entry_edit_reaches_a_connected_client(live_gateway, catalog_setup):
    setup, entry, marker = catalog_setup
    async with live_gateway.session(setup.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        before = await session.call_tool("use_tool", use("dev", "fixture", "echo", {"text": "1"}))
        assert text_of(before) == f"{marker}1"
        old_pids = processes_with(marker)
        assert len(old_pids) == 1

        # The operator edits the entry; the tenant's server is not touched.
        def edit() -> None:
            entry.args = [FIXTURE_SERVER, "--prefix=v2-{{prefix}}"]
            entry.full_clean()
            entry.save()

        await sync_to_async(edit)()
        after = await session.call_tool("use_tool", use("dev", "fixture", "echo", {"text": "2"}))
        assert text_of(after) == f"v2-{marker}2"
    wait_until(lambda: old_pids[0] not in processes_with(marker), 15, "the old process to exit")
