"""Secrets stay put: `${VAR}` reads only what the operator allows (never the gateway's
own settings), a client hears a classified phrase and an incident id, and the log line of
that incident holds the detail with the server's secret values redacted."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys

import pytest
from django.core.management import call_command

from tests.harness.paths import ROOT
from tests.harness.results import error_of, text_of, use
from tests.harness.servers import http_fixture_process

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-value-of-the-server"


def incident_lines(caplog: pytest.LogCaptureFixture, incident: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "workbench.incident" and f"incident {incident} " in record.getMessage()
    ]


def connect_error(result) -> tuple[str, str, dict]:
    code, text = error_of(result)
    return code, text, result.structured_content["error"]["details"]


@pytest.mark.parametrize(
    ("allowed", "field", "value", "name"),
    [
        ([], "args", "${WORKBENCH_TEST_ANYTHING}", "WORKBENCH_TEST_ANYTHING"),  # none allowed
        (["*"], "args", "${SECRET_KEY}", "SECRET_KEY"),  # a pattern never reaches settings
        (["*"], "env", "${ENCRYPTION_KEYS}", "ENCRYPTION_KEYS"),
        (["DATABASE_URL"], "args", "${DATABASE_URL:-x}", "DATABASE_URL"),  # nor a default
        (["CACHE_URL"], "env", "${CACHE_URL}", "CACHE_URL"),
        (["TEST_*"], "args", "${TEST_DATABASE_URL}", "TEST_DATABASE_URL"),
        (["WORKBENCH_*"], "env", "${WORKBENCH_EGRESS_ALLOW}", "WORKBENCH_EGRESS_ALLOW"),
        (["WORKBENCH_TEST_*"], "env", "${WORKBENCH_TEST_FROM_FILE}", "WORKBENCH_TEST_FROM_FILE"),
    ],
)
async def test_a_reference_to_a_name_not_allowed_fails_naming_it(
    live_gateway, amake_setup, settings, allowed, field, value, name
):
    settings.WORKBENCH_ENV_REFERENCES = allowed
    settings.WORKBENCH_ENV_FILE_NAMES = frozenset({"WORKBENCH_TEST_FROM_FILE"})
    os.environ.setdefault("WORKBENCH_TEST_FROM_FILE", "from-the-env-file")
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    fields = {"env": {"TOKEN": value}} if field == "env" else {}
    args = (value,) if field == "args" else ()
    await setup.afixture_server(dev, "leaky", *args, **fields)
    where = "env.TOKEN" if field == "env" else "args[1]"
    async with live_gateway.session(setup.key) as session:
        code, text, details = connect_error(
            await session.call_tool("open_toolbox", {"toolbox": "dev"})
        )
    assert code == "CONNECTION_FAILED"
    assert text == (
        "Error opening toolbox 'dev': Failed to connect to server 'leaky' in toolbox 'dev': "
        f"environment variable '{name}' is not allowed (in {where})"
    )
    assert details["incidents"] == {"leaky": details["incident"]}


async def test_a_remote_header_or_url_cannot_read_the_secret_key(
    live_gateway, amake_setup, settings
):
    settings.WORKBENCH_ENV_REFERENCES = ["*"]
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await dev.servers.acreate(
        name="h",
        transport="streamable-http",
        url="http://127.0.0.1:9/mcp",
        headers={"Authorization": "Bearer ${SECRET_KEY}"},
        position=1,
    )
    await dev.servers.acreate(
        name="u", transport="sse", url="http://127.0.0.1:9/${SECRET_KEY}", position=2
    )
    async with live_gateway.session(setup.key) as session:
        code, text = error_of(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert code == "CONNECTION_FAILED"
    assert text == (
        "Error opening toolbox 'dev': "
        "Failed to connect to server 'h' in toolbox 'dev': "
        "environment variable 'SECRET_KEY' is not allowed (in headers.Authorization)\n"
        "Failed to connect to server 'u' in toolbox 'dev': "
        "environment variable 'SECRET_KEY' is not allowed (in url)"
    )


async def test_stderr_and_expanded_values_reach_the_log_redacted_never_the_client(
    live_gateway, amake_setup, monkeypatch, caplog
):
    caplog.set_level(logging.INFO)
    monkeypatch.setenv("WORKBENCH_TEST_COMMAND", f"no-such-command-{SECRET}")
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    # Prints `token=<its TOKEN>` on stderr, then exits during start-up.
    await setup.afixture_server(
        dev, "dies", "--leak-env", "TOKEN", "--exit-at-start", env={"TOKEN": SECRET}, position=1
    )
    await dev.servers.acreate(
        name="missing", command="${WORKBENCH_TEST_COMMAND}", env={"TOKEN": SECRET}, position=2
    )
    async with live_gateway.session(setup.key) as session:
        result = await session.call_tool("open_toolbox", {"toolbox": "dev"})
    code, text, details = connect_error(result)
    assert code == "CONNECTION_FAILED"
    assert text == (
        "Error opening toolbox 'dev': "
        "Failed to connect to server 'dies' in toolbox 'dev': "
        "the server exited during start-up (exit code 2)\n"
        "Failed to connect to server 'missing' in toolbox 'dev': the command was not found"
    )
    assert SECRET not in str(result.model_dump())
    [dies] = incident_lines(caplog, details["incidents"]["dies"])
    assert "the server exited during start-up" in dies
    assert "stderr tail: " in dies and "token=[redacted]" in dies
    [missing] = incident_lines(caplog, details["incidents"]["missing"])
    assert "the command was not found" in missing and "[redacted]" in missing
    assert SECRET not in caplog.text


async def test_stderr_during_calls_and_http_client_logs_are_redacted(
    live_gateway, amake_setup, monkeypatch, caplog
):
    caplog.set_level(logging.INFO)
    monkeypatch.setenv("WORKBENCH_TEST_QUERY_TOKEN", SECRET)
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "local", env={"TOKEN": SECRET}, position=1)
    with http_fixture_process() as port:
        await dev.servers.acreate(
            name="remote",
            transport="streamable-http",
            url=f"http://127.0.0.1:{port}/mcp?token=${{WORKBENCH_TEST_QUERY_TOKEN}}",
            position=2,
        )
        async with live_gateway.session(setup.key) as session:
            await session.call_tool("open_toolbox", {"toolbox": "dev"})
            leaked = await session.call_tool(
                "use_tool", use("dev", "local", "leak", {"names": ["TOKEN"]})
            )
            echoed = await session.call_tool(
                "use_tool", use("dev", "remote", "echo", {"text": "x"})
            )
    assert text_of(leaked) == "leaked"
    assert text_of(echoed) == "x"
    assert any(
        record.name == "workbench.downstream.stderr" and "TOKEN=[redacted]" in record.getMessage()
        for record in caplog.records
    )
    assert any(
        record.name == "httpx2" and "token=[redacted]" in record.getMessage()
        for record in caplog.records
    )
    assert SECRET not in caplog.text


def test_export_config_output_is_created_owner_only(make_setup, tmp_path):
    setup = make_setup()
    toolbox = setup.toolbox("dev")
    setup.fixture_server(toolbox, "s", env={"TOKEN": SECRET})
    target = tmp_path / "export.json"
    target.write_text("old")
    target.chmod(0o644)  # an existing file is made owner-only too
    call_command("export_config", "--tenant", setup.tenant.slug, "--output", str(target))
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert SECRET in target.read_text()
    fresh = tmp_path / "fresh.json"
    call_command("export_config", "--tenant", setup.tenant.slug, "--output", str(fresh))
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


def test_make_writes_the_env_file_owner_only(tmp_path):
    (tmp_path / "pyproject.toml").touch()  # the venv's prerequisite, older than the venv
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed").touch()
    os.utime(tmp_path / "pyproject.toml", (0, 0))
    subprocess.run(
        [
            "make",
            "-s",
            "-f",
            str(ROOT / "Makefile"),
            "-C",
            str(tmp_path),
            ".env",
            f"VENV={venv}",
            f"PY={sys.executable}",
        ],
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
    )
    env_file = tmp_path / ".env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "SECRET_KEY=" in env_file.read_text()
