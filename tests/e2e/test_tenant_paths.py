"""Host paths a sandboxed server is shown, end to end through /mcp (issue 20, findings 2
and 6): a published server made from the catalog lists a directory under its tenant's
root; a hostile server swaps a directory of its writable mount for a symlink to the
gateway's own files, and the next server mounting that directory is refused at spawn,
the client told the sandbox could not start and the log why."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings

from mcp_gateway.downstream.sandbox.paths import REFUSED
from tests.harness.live import TenantSetup
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.tenant_dirs import tenant_dir
from toolboxes.models import CatalogEntry, CatalogParameter, Server

# Between the gateway and its downstream servers: the same whatever the test database.
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

NODE_BIN = Path(__file__).resolve().parents[1] / "node_modules" / ".bin"
PROJECT = str(settings.BASE_DIR)


@pytest.fixture
def lister(make_setup) -> tuple[TenantSetup, Path]:
    """Tenant acme's filesystem server (npm's), made from a catalog entry whose
    directory is a parameter, given a directory under the tenant's root."""
    if shutil.which("node") is None or not (NODE_BIN / "mcp-server-filesystem").exists():
        pytest.skip("Node or the npm test servers are missing (npm ci --prefix tests)")
    setup = make_setup("acme")
    mine = tenant_dir(setup.tenant.slug)
    (mine / "hello.txt").write_text("hello from acme's own directory")
    entry = CatalogEntry.objects.create(
        name="io.example/filesystem",
        command=str(NODE_BIN / "mcp-server-filesystem"),
        args=["{{allowed_directory}}"],
        network=False,
    )
    CatalogParameter.objects.create(entry=entry, name="allowed_directory", required=True)
    server = Server(
        toolbox=setup.toolbox("files"),
        name="filesystem",
        catalog_entry=entry,
        parameters={"allowed_directory": str(mine)},
    )
    server.full_clean()
    server.save()
    return setup, mine


async def test_a_directory_under_the_tenant_root_is_listed(live_gateway, lister):
    setup, mine = lister
    async with live_gateway.session(setup.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "files"}))
        listed = await session.call_tool(
            "use_tool", use("files", "filesystem", "list_directory", {"path": str(mine)})
        )
    assert not listed.is_error, text_of(listed)
    assert "[FILE] hello.txt" in text_of(listed)


@pytest.fixture
def swapper(make_setup) -> tuple[TenantSetup, Path]:
    """Tenant swapper: the hostile server with a writable mount (its uid's) holding
    `shared`, and a reader whose read-only mount is `shared`; both valid as configured."""
    setup = make_setup("swapper")
    uid = settings.WORKBENCH_SANDBOX_UID_BASE + setup.tenant.pk
    mount = tenant_dir(setup.tenant.slug)
    shared = mount / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("the tenant's own notes")
    for path in (mount, shared):
        os.chown(path, uid, uid)
    setup.hostile_server("evil", mounts=[{"path": str(mount), "writable": True}], network=False)
    setup.fixture_server(setup.toolbox("reader"), "reader", mounts=[{"path": str(shared)}])
    return setup, shared


async def test_a_symlink_swapped_into_a_writable_mount_is_refused_at_the_next_spawn(
    live_gateway, swapper, caplog
):
    setup, shared = swapper
    caplog.set_level(logging.INFO)
    async with live_gateway.session(setup.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "evil"}))
        swapped = await session.call_tool(
            "use_tool",
            use("evil", "hostile", "swap", {"path": str(shared), "target": PROJECT}),
        )
        assert json.loads(text_of(swapped)) == {"swapped": str(shared), "to": PROJECT}
        assert os.readlink(shared) == PROJECT  # on the host: the next bind would follow it
        opened = await session.call_tool("open_toolbox", {"toolbox": "reader"})
    code, text = error_of(opened)
    assert code == "CONNECTION_FAILED"
    assert REFUSED in text
    [incident] = [r.getMessage() for r in caplog.records if r.name == "workbench.incident"]
    assert (
        f"{REFUSED}: start: mount not bound: {shared} resolves to {PROJECT}: name the real "
        "path, without symlinks"
    ) in incident
