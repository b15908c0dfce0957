"""The stdio sandbox, end to end through /mcp: a hostile server in tenant A tries every
escape while tenant B's server keeps answering; limits stop a server with a reason that
names them; a gateway without bubblewrap says so."""

from __future__ import annotations

import json
import re
import sys
import uuid
from dataclasses import replace
from io import StringIO
from pathlib import Path

import anyio
import pytest
from django.conf import settings
from django.core.management import call_command

from mcp_gateway.downstream.sandbox.argv import HOME
from tests.harness.procs import processes_with
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.servers import http_fixture_process
from tests.harness.tenant_dirs import tenant_dir

# Between the gateway and its downstream servers (processes, networks): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

PROJECT = Path(settings.BASE_DIR)
MEMORY_MB = 128
PROCESSES = 40
CPU_SECONDS = 4  # enough to start (imports), not to spin for long
NEIGHBOUR_CALLS = 90


@pytest.fixture
def tenants(make_setup):
    """Tenant A with the hostile server (network off, small limits); tenant B with a
    plain server holding a secret in its env."""
    marker, secret = uuid.uuid4().hex, uuid.uuid4().hex
    a = make_setup("tenant-a")
    a.hostile_server("evil", network=False, memory_limit_mb=MEMORY_MB, process_limit=PROCESSES)
    b = make_setup("tenant-b")
    b.fixture_server(b.toolbox("dev"), "plain", "--prefix", marker, env={"SECRET": secret})
    return a, b, marker, secret


async def test_a_hostile_server_escapes_nothing_and_its_neighbour_keeps_working(
    live_gateway, tenants
):
    a, b, marker, secret = tenants
    port = int(live_gateway.url.split(":")[2].split("/")[0])
    async with live_gateway.session(b.key) as b_session, live_gateway.session(a.key) as evil:
        payload(await b_session.call_tool("open_toolbox", {"toolbox": "dev"}))
        shown = await b_session.call_tool("use_tool", use("dev", "plain", "env"))
        assert json.loads(text_of(shown))["SECRET"] == secret  # the secret is there to steal
        [victim] = processes_with(marker)
        payload(await evil.call_tool("open_toolbox", {"toolbox": "evil"}))
        who = json.loads(
            text_of(await evil.call_tool("use_tool", use("evil", "hostile", "whoami")))
        )
        assert who["uid"] == settings.WORKBENCH_SANDBOX_UID_BASE + a.tenant.pk
        assert who["home"] == HOME

        files = [str(PROJECT / name) for name in (".env", "workbench.sqlite3", "manage.py")]
        files += [settings.WORKBENCH_STORE_DIR, "/etc/shadow"]
        assert (PROJECT / "manage.py").exists()  # readable on the host, so a read would show
        write_targets = ["/", "/etc", "/usr", str(Path(sys.executable).parent), str(PROJECT)]
        arguments = {
            "victim_pid": victim,
            "secret": secret,
            "files": files,
            "project_dir": str(PROJECT),
            "project_entries": ["manage.py", "workbench_site", "toolboxes", ".env", ".git"],
            "write_targets": write_targets,
            "gateway_port": port,
            "memory_mb": MEMORY_MB,
            "forks": 10_000,
        }
        b_answers: list[str] = []
        report: dict = {}

        async def neighbour() -> None:
            # Below the key's burst (100 use_tool calls, then 50 a second): a long attack on
            # a loaded machine must not turn the neighbour's check into one of rate limits.
            while not report and len(b_answers) < NEIGHBOUR_CALLS:
                result = await b_session.call_tool(
                    "use_tool", use("dev", "plain", "echo", {"text": "still here"})
                )
                b_answers.append(text_of(result))

        async def attack() -> None:
            result = await evil.call_tool("use_tool", use("evil", "hostile", "escape", arguments))
            report.update(json.loads(text_of(result)))

        async with anyio.create_task_group() as group:
            group.start_soon(neighbour)
            group.start_soon(attack)

    # A write the server saw succeed may have landed on its own tmpfs (a project under
    # /tmp, say): the host says whether it escaped.
    landed = [
        str(marker_file)
        for marker_file in (Path(target) / "hostile-was-here" for target in write_targets)
        if marker_file.exists()
    ]
    report["write_outside_home"]["escaped"] = bool(landed)
    report["write_outside_home"]["detail"] += f"; on the host: {landed or 'nothing'}"
    print(json.dumps(report, indent=1))  # the evidence, with -s
    escaped = {name: found for name, found in report.items() if found["escaped"]}
    assert set(escaped) == {"control_own_home_and_tmp"}, json.dumps(report, indent=1)
    assert "Resource temporarily unavailable" in report["fork"]["detail"]
    assert "MemoryError" in report["allocate"]["detail"]
    assert b_answers
    assert [answer for answer in b_answers if not answer.endswith("still here")] == []
    assert processes_with(marker) == [victim]  # not signalled, still the same process


@pytest.fixture
def burner(make_setup):
    setup = make_setup("burner")
    setup.hostile_server("evil", cpu_limit_seconds=CPU_SECONDS, memory_limit_mb=MEMORY_MB)
    return setup


async def test_a_server_stopped_by_its_cpu_limit_gets_a_reason_naming_it(live_gateway, burner):
    async with live_gateway.session(burner.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "evil"}))
        result = await session.call_tool("use_tool", use("evil", "hostile", "burn"))
    code, text = error_of(result)
    assert code == "DOWNSTREAM_ERROR"
    assert text.endswith(f"the server was stopped by its CPU time limit ({CPU_SECONDS} s)")


async def test_a_server_stopped_by_its_memory_limit_gets_a_reason_naming_it(live_gateway, burner):
    async with live_gateway.session(burner.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "evil"}))
        result = await session.call_tool("use_tool", use("evil", "hostile", "hog"))
    assert error_of(result) == (
        "DOWNSTREAM_ERROR",
        "Error executing tool 'hog' in server 'hostile' (toolbox 'evil'): "
        f"the server was stopped by its memory limit ({MEMORY_MB} MiB)",
    )


@pytest.fixture
def stdio_setup(make_setup):
    """A stdio server in `dev`, a remote one in `remote`."""
    setup = make_setup("nobwrap")
    setup.fixture_server(setup.toolbox("dev"), "plain")
    with http_fixture_process() as port:
        setup.toolbox("remote").servers.create(
            name="web", transport="streamable-http", url=f"http://127.0.0.1:{port}/mcp"
        )
        yield setup


async def test_without_bubblewrap_stdio_servers_fail_with_how_to_fix_it(live_gateway, stdio_setup):
    pool = live_gateway.gateway.pool  # the gateway's sandbox policy, handed to each connect
    configured = pool.sandbox
    pool.sandbox = replace(configured, bwrap="/nonexistent/bwrap")
    try:
        async with live_gateway.session(stdio_setup.key) as session:
            result = await session.call_tool("open_toolbox", {"toolbox": "dev"})
            # Remote servers run nowhere near the sandbox: they keep working.
            payload(await session.call_tool("open_toolbox", {"toolbox": "remote"}))
            remote = await session.call_tool(
                "use_tool", use("remote", "web", "echo", {"text": "still fine"})
            )
    finally:
        pool.sandbox = configured
    assert text_of(remote) == "still fine"
    code, text = error_of(result)
    assert code == "CONNECTION_FAILED"
    assert "the sandbox could not start: bubblewrap (/nonexistent/bwrap) is not installed" in text
    assert "apt-get install bubblewrap" in text


@pytest.fixture
def demo(transactional_db, tmp_path):
    """`make run`'s demo, its repository made outside the project directory (in one the
    sandbox may show: not below tmp_path's 0700 parent)."""
    out = StringIO()
    data_dir = tenant_dir("demo") / "demo"
    call_command(
        "setup_demo",
        "--data-dir",
        str(data_dir),
        "--credentials",
        str(tmp_path / "credentials.json"),
        stdout=out,
    )
    return re.search(r"Demo API key: (\S+)", out.getvalue()).group(1), data_dir / "repo"


async def test_the_demo_toolbox_works_in_the_sandbox(live_gateway, demo):
    key, repo = demo
    async with live_gateway.session(key) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "demo"}))
        assert opened["servers_connected"] == 2
        now = await session.call_tool(
            "use_tool", use("demo", "time", "get_current_time", {"timezone": "Etc/UTC"})
        )
        assert now.structured_content["timezone"] == "Etc/UTC"
        log = await session.call_tool(
            "use_tool", use("demo", "git", "git_log", {"repo_path": str(repo)})
        )
        assert "Demo repository" in text_of(log)
