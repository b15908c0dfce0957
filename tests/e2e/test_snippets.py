"""The Python snippets the project prints (the README's quick start, `make run`'s, and
docs/clients.md's for mcp 1.x), run as printed against a toolbox whose server takes longer
to start than httpx2's default 5 s timeout, as a cold `npx -y` server does: they wait for it
(issues 20 and 26). The README's runs whole, against a toolbox `demo` as its calls expect: a
cold npm server (server-memory, started for the first time), PyPI's time server (its
`use_tool` call) and the slow one."""

from __future__ import annotations

import re
import shutil
import sys
from io import StringIO
from pathlib import Path

import anyio
import pytest
from django.conf import settings

from tests.harness.live import TenantSetup
from workbench_site.management.commands.setup_demo import DEMO_SLUG
from workbench_site.management.commands.setup_demo import Command as SetupDemo

# Between the gateway and its downstream servers (processes): the same whatever the test
# database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

CACHE_SERVER = str(Path(__file__).resolve().parents[1] / "servers" / "cache_server.py")
MEMORY_SERVER = Path(__file__).resolve().parents[1] / "node_modules" / ".bin" / "mcp-server-memory"
START_SECONDS = 6  # past httpx2's default timeout of 5 s
README = Path(settings.BASE_DIR) / "README.md"
CLIENTS = Path(settings.BASE_DIR) / "docs" / "clients.md"  # the mcp 1.x snippet's page
MCP1_VENV = Path(settings.BASE_DIR) / "tests" / ".mcp1-venv"  # the Makefile's MCP1_VENV


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
    demo = setups[0].tenant.toolboxes.get(name="demo")
    extra = {"time": (sys.executable, ["-m", "mcp_server_time"])}
    if shutil.which("node") and MEMORY_SERVER.exists():  # make test installs it with Node
        extra["memory"] = (str(MEMORY_SERVER), [])
    for position, (name, (command, args)) in enumerate(extra.items(), start=1):
        demo.servers.create(name=name, command=command, args=args, position=position).full_clean()
    return setups


def readme_snippet(url: str, setup: TenantSetup, sdk: int = 2) -> str:
    """The snippet for that `mcp` SDK generation (the README's Python block for 2.x,
    docs/clients.md's for 1.x), at `setup`'s tenant endpoint as the demo's is printed."""
    page = README if sdk == 2 else CLIENTS
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert len(blocks) == 1, page
    code = blocks[0]
    assert f'"http://127.0.0.1:8000/mcp/t/{DEMO_SLUG}"' in code
    tenant_url = f"{url}/t/{setup.tenant.slug}"
    return code.replace(f"http://127.0.0.1:8000/mcp/t/{DEMO_SLUG}", tenant_url).replace(
        "wb_xxxxxxxx_...", setup.key
    )


def make_run_snippet(url: str, setup: TenantSetup) -> str:
    """What `make run` prints, for `setup`'s tenant instead of the demo's."""
    host, port = url.removeprefix("http://").removesuffix("/mcp").split(":")
    out = StringIO()
    SetupDemo(stdout=out)._print(setup.key, "unused", host, port)
    code = re.search(r"<<'PY'\n(.*?)\nPY\n", out.getvalue(), re.S).group(1)
    assert f"{url}/t/{DEMO_SLUG}'" in code  # the demo tenant's own endpoint
    return code.replace(f"{url}/t/{DEMO_SLUG}'", f"{url}/t/{setup.tenant.slug}'")


async def test_the_printed_snippets_wait_for_a_server_slower_than_httpx2s_default(
    live_gateway, tenants
):
    readme, make_run, no_timeout = tenants
    url = live_gateway.url
    snippets = {
        "readme": readme_snippet(url, readme),
        "make-run": make_run_snippet(url, make_run),
        # The same without its timeout: what issue 20 saw.
        "no-timeout": make_run_snippet(url, no_timeout).replace(
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
    servers = 3 if shutil.which("node") and MEMORY_SERVER.exists() else 2
    readme_out = results["readme"].stdout.decode()
    assert f'"servers_connected": {servers}' in readme_out
    assert '"name": "read_graph"' in readme_out or servers == 2  # the cold npm server's
    assert "structured_content={'timezone': 'Etc/UTC'" in readme_out  # use_tool's answer
    assert '"servers_connected": 1' in results["make-run"].stdout.decode()
    # The SDK's task group ends in an exception group whose one cause is the bare timeout.
    assert results["no-timeout"].returncode == 1
    assert "\n    | httpx2.ReadTimeout\n" in results["no-timeout"].stderr.decode()


@pytest.fixture
def time_demo(make_setup) -> TenantSetup:
    setup = make_setup("readme-mcp1")
    setup.toolbox("demo").servers.create(
        name="time", command=sys.executable, args=["-m", "mcp_server_time"]
    ).full_clean()
    return setup


async def test_the_readmes_snippet_for_mcp_1(live_gateway, time_demo):
    """In a virtualenv of mcp 1.x (make test builds it: tests/.mcp1-venv), as LangChain's
    adapters need; against a real toolbox `demo` whose server starts cold."""
    python = MCP1_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{MCP1_VENV} is missing (make test builds it)")
    setup = time_demo
    snippet = readme_snippet(live_gateway.url, setup, sdk=1)
    assert "import asyncio, httpx\n" in snippet and "as (r, w, _)" in snippet
    version = "import importlib.metadata as m; print(m.version('mcp'))"
    with anyio.fail_after(60):
        installed = await anyio.run_process([str(python), "-c", version])
        assert installed.stdout.decode().startswith("1."), installed.stdout
        done = await anyio.run_process([str(python), "-c", snippet], check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    out = done.stdout.decode()
    assert out.startswith("## Available Toolboxes\n\n- **demo** (1 server): ")
    assert '"servers_connected": 1' in out and '"name": "get_current_time"' in out
