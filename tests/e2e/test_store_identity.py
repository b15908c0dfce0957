"""A command pointed at another store than the running gateways' refuses to run (issue
23): what an operator saw was `revoke_api_key` run without the replicas' CACHE_URL, the key
marked revoked in the database and served by every replica for minutes after."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.e2e.test_shared_store import set_up
from tests.harness.deployment import ROOT, Deployment
from tests.harness.results import INITIALIZE_PARAMS, raw_rpc, refusal_reason

pytestmark = pytest.mark.once


def test_revoking_with_another_store_is_refused_and_with_the_gateways_store_it_works(
    tmp_path: Path,
) -> None:
    (tmp_path / "gw").mkdir()
    deployment = Deployment(tmp_path / "gw")
    try:
        deployment.migrate()
        _, _, key = set_up(deployment, "acme", "m:")
        _, url, _ = deployment.start_gateway("gateway")  # records its store at start
        elsewhere = {**deployment.env, "WORKBENCH_STORE_DIR": str(tmp_path / "other-store")}
        command = [sys.executable, str(ROOT / "manage.py"), "revoke_api_key", key[:11]]
        refused = subprocess.run(
            command, env=elsewhere, cwd=ROOT, capture_output=True, text=True, check=False
        )
        assert refused.returncode == 1
        assert "(workbench.E001) This process's shared store is not the gateways'" in (
            refused.stderr
        )
        assert f"{tmp_path / 'other-store'}; the gateways of this database use" in refused.stderr
        assert f"{tmp_path / 'gw' / 'store'} (recorded at a gateway's start" in refused.stderr

        async def initialize() -> httpx2.Response:
            async with httpx2.AsyncClient(timeout=60) as http:
                return await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS, key=key)

        assert anyio.run(initialize).status_code == 200  # nothing was revoked
        deployment.manage("revoke_api_key", key[:11])  # the gateways' own store
        revoked = anyio.run(initialize)
        assert refusal_reason(revoked, 401) == "revoked_api_key"
    finally:
        deployment.stop_all()
