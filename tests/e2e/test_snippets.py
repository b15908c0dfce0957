"""The Python snippets the project prints (the README's quick start, `make run`'s), run as
printed against a toolbox whose server takes longer to start than httpx2's default 5 s
timeout, as a cold `npx -y` server does: they wait for it (issue 20)."""

from __future__ import annotations

import re
import sys
from io import StringIO
from pathlib import Path

import anyio
import pytest
from django.conf import settings

from tests.harness.live import TenantSetup
from toolboxes.management.commands.setup_demo import Command as SetupDemo

# Between the gateway and its downstream servers (processes): the same whatever the test
# database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

CACHE_SERVER = str(Path(__file__).resolve().parents[1] / "servers" / "cache_server.py")
START_SECONDS = 6  # past httpx2's default timeout of 5 s
README = Path(settings.BASE_DIR) / "README.md"


def slow_demo(setup: TenantSetup) -> None:
    """The tenant's toolbox `demo`, whose one server starts in START_SECONDS."""
    server = setup.toolbox("demo").servers.create(
        name="slow", command=sys.executable, args=[CACHE_SERVER, "--delay", str(START_SECONDS)]
    )
    server.full_clean()


@pytest.fixture
def tenants(make_setup) -> list[TenantSetup]:
    """One tenant per snippet, so that each opens a cold server."""
    setups = [make_setup(slug) for slug in ("readme", "make-run", "no-timeout")]
    for setup in setups:
        slow_demo(setup)
    return setups


def readme_snippet(url: str, key: str) -> str:
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    return code.replace("http://127.0.0.1:8000/mcp", url).replace("wb_xxxxxxxx_...", key)


def make_run_snippet(url: str, key: str) -> str:
    host, port = url.removeprefix("http://").removesuffix("/mcp").split(":")
    out = StringIO()
    SetupDemo(stdout=out)._print(key, "unused", host, port)
    return re.search(r"<<'PY'\n(.*?)\nPY\n", out.getvalue(), re.S).group(1)


async def test_the_printed_snippets_wait_for_a_server_slower_than_httpx2s_default(
    live_gateway, tenants
):
    readme, make_run, no_timeout = tenants
    url = live_gateway.url
    snippets = {
        "readme": readme_snippet(url, readme.key),
        "make-run": make_run_snippet(url, make_run.key),
        # The same without its timeout: what issue 20 saw.
        "no-timeout": make_run_snippet(url, no_timeout.key).replace(
            "headers=headers, timeout=timeout", "headers=headers"
        ),
    }
    assert "headers=headers, timeout=timeout" in snippets["readme"]
    results = {}

    async def run(name: str) -> None:
        results[name] = await anyio.run_process([sys.executable, "-c", snippets[name]], check=False)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for name in snippets:
                group.start_soon(run, name)
    for name in ("readme", "make-run"):
        assert results[name].returncode == 0, results[name].stderr.decode()[-2000:]
        assert '"servers_connected": 1' in results[name].stdout.decode()
    # The SDK's task group ends in an exception group whose one cause is the bare timeout.
    assert results["no-timeout"].returncode == 1
    assert "\n    | httpx2.ReadTimeout\n" in results["no-timeout"].stderr.decode()
