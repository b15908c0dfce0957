"""`manage.py check_config [--tenant SLUG]`: every enabled server connected as the gateway
would, a table of tenant, toolbox, server, status, tool count and reason, filter warnings,
and a non-zero exit when any server fails."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.harness.paths import FIXTURE_SERVER
from tests.toolboxes.helpers import make_server
from toolboxes.models import Server, Tenant, Toolbox

CRASH_ARGS = ["-c", "import sys; sys.exit(2)"]
TYPO_WARNING = "The filter names tools the server does not offer: get_curent_time."


@pytest.fixture
def tenants(db):
    acme = Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme"), name="dev", description="d"
    )
    globex = Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="globex"), name="ops", description="o"
    )
    make_server(acme, "fixture", [FIXTURE_SERVER], tool_filters=["echo", "get_curent_time"])
    make_server(acme, "off", CRASH_ARGS, enabled=False, position=1)  # disabled: not checked
    make_server(globex, "broken", CRASH_ARGS)
    return acme, globex


def run(*args: str) -> tuple[str, CommandError | None]:
    out = StringIO()
    try:
        call_command("check_config", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


def test_every_enabled_server_in_a_table_and_a_failure_exits_non_zero(tenants):
    out, error = run()
    lines = out.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "tenant",
        "toolbox",
        "server",
        "status",
        "tools",
        "reason",
    ]
    rows = [re.split(r"\s{2,}", line) for line in lines[1:3]]
    tools = len(Server.objects.get(name="fixture").last_check_tools)
    assert rows[0] == ["acme", "dev", "fixture", "ok", str(tools), TYPO_WARNING]
    reason = Server.objects.get(name="broken").last_check_reason
    assert reason.startswith("the server exited during start-up")
    assert rows[1] == ["globex", "ops", "broken", "failing", "-", reason]
    assert lines[3] == (
        "1 of 2 servers connected; 1 with filters naming tools the server does not offer."
    )
    assert str(error) == "1 server failed."
    assert Server.objects.get(name="off").last_check_ok is None


def test_one_tenant_only_and_warnings_alone_exit_zero(tenants):
    out, error = run("--tenant", "acme")
    assert error is None
    assert "globex" not in out and "acme    dev" in out
    assert Server.objects.get(name="broken").last_check_ok is None


def test_an_unknown_tenant_is_an_error(tenants):
    assert str(run("--tenant", "nope")[1]) == "No tenant 'nope'."
