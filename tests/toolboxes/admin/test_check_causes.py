"""A check that fails tells the admin what to act on (issue 37): the client's classified
phrase stays as it was, and beside it the incident id and, for operators, the cause: an
address the egress policy refuses with the setting that allows it, a command not found by
name, a package registry the sandbox's network refuses, the stderr tail redacted. Recorded
with the server's last check: the server's page and the API's check and server show it."""

from __future__ import annotations

import re
import sys

import anyio
import pytest
from django.urls import reverse

from kernel.egress import UNREACHABLE, EgressRefused
from mcp_gateway.downstream import causes, failures
from mcp_gateway.snapshots.servers import ServerConfig
from tests.accounts.conftest import acme, as_user, globex, people  # noqa: F401
from tests.api.conftest import api, tokens  # noqa: F401
from toolboxes.models import Server

INCIDENT = re.compile(r"[0-9a-f]{12}")
PATH = "/tenants/acme/toolboxes/acme-tools/servers/{}/check"


def make(acme, name: str, **fields) -> Server:  # noqa: F811
    server = Server(toolbox=acme.toolbox, name=name, position=7, **fields)
    server.full_clean()
    server.save()
    return server


def test_a_refused_address_names_the_setting_that_allows_it(api, acme, settings):  # noqa: F811
    settings.WORKBENCH_EGRESS_ALLOW = []
    make(acme, "local", transport="streamable-http", url="http://127.0.0.1:9/mcp")
    result = api("operator")("POST", PATH.format("local")).json()
    # The client's phrase, as /mcp says it (tests/e2e/test_egress.py): nothing more.
    assert result["reason"] == "the server could not be reached"
    assert INCIDENT.fullmatch(result["incident"])
    assert result["cause"] == (
        "egress refused: 127.0.0.1 resolves to 127.0.0.1 (loopback) (while starting)\n"
        "The egress policy refuses loopback addresses: remote servers reach public addresses "
        "only. WORKBENCH_EGRESS_ALLOW=127.0.0.1/32 allows it; then restart the gateway: it "
        "reads its settings when it starts."
    )
    # Recorded with the server's last check: the API's server, the admin's pages.
    shown = api("operator")("GET", PATH.format("local").removesuffix("/check")).json()
    assert shown["last_check_incident"] == result["incident"]
    assert shown["last_check_cause"] == result["cause"]
    # A tenant's admin may check: the phrase and incident, not the cause (it names the
    # gateway's settings and the addresses behind a URL).
    own = api("acme_admin")("POST", PATH.format("local")).json()
    assert own["reason"] == "the server could not be reached" and own["cause"] is None
    assert INCIDENT.fullmatch(own["incident"])
    assert (
        api("acme_admin")("GET", PATH.format("local").removesuffix("/check")).json()[
            "last_check_cause"
        ]
        is None
    )


def test_the_server_page_shows_the_incident_and_the_cause_to_operators(as_user, acme, settings):  # noqa: F811
    settings.WORKBENCH_EGRESS_ALLOW = []
    server = make(acme, "local", transport="streamable-http", url="http://127.0.0.1:9/mcp")
    from mcp_gateway import check_servers

    [result] = check_servers([Server.objects.select_related("toolbox__tenant").get(pk=server.pk)])
    change = reverse("admin:toolboxes_server_change", args=[server.pk])
    listing = reverse("admin:toolboxes_server_changelist")
    status = f"failing: the server could not be reached (0 minutes ago; incident {result.incident})"
    operator = as_user("operator").get(change).content.decode()
    assert status in operator
    assert '<pre class="wb-cause" id="check-cause">egress refused: 127.0.0.1' in operator
    assert "WORKBENCH_EGRESS_ALLOW=127.0.0.1/32" in operator
    admin = as_user("acme_admin").get(change).content.decode()
    assert status in admin and "wb-cause" not in admin
    assert status in as_user("acme_admin").get(listing).content.decode()
    # The check page, from the server's row once no background check's outcome is kept.
    check = reverse("admin:toolboxes_server_check", args=[server.pk])
    page = as_user("operator").get(check).content.decode()
    summary = "Server acme-tools/local: could not connect: the server could not be reached."
    assert summary in page
    assert f'id="check-incident">Incident <code>{result.incident}</code>' in page
    assert '<pre class="wb-cause" id="check-cause">egress refused: 127.0.0.1' in page
    theirs = as_user("acme_admin").get(check).content.decode()
    assert summary in theirs and result.incident in theirs and "check-cause" not in theirs


def test_a_refused_host_name_is_allowed_by_its_name_or_its_address():
    server = ServerConfig(name="issues", transport="streamable-http", url="http://localhost:9/")
    detail = "start: egress refused: localhost resolves to ::1 (loopback)"
    story = failures.Story(UNREACHABLE, "0123456789ab", detail, (), EgressRefused("localhost ..."))
    assert anyio.run(causes.explain, server, story).split("\n") == [
        "egress refused: localhost resolves to ::1 (loopback) (while starting)",
        "The egress policy refuses loopback addresses: remote servers reach public addresses "
        "only. WORKBENCH_EGRESS_ALLOW=localhost (the name) or ::1/128 (its address) allows it; "
        "then restart the gateway: it reads its settings when it starts.",
    ]


def test_a_command_not_found_is_named(api, acme):  # noqa: F811
    make(acme, "missing", command="mcp-server-nowhere-1", args=["--flag"])
    result = api("operator")("POST", PATH.format("missing")).json()
    assert result["reason"] == "the command was not found"  # what a client reads
    first, second, third = result["cause"].split("\n")
    assert first == "ExpansionError: command not found: mcp-server-nowhere-1 (while starting)"
    assert second.startswith(
        "The command 'mcp-server-nowhere-1' was not found: it is not on the PATH the server "
        "is given ("
    )
    assert second.endswith("). Install it on the gateway's host, or give its full path.")
    assert third == "The server wrote nothing to stderr."


def test_the_stderr_tail_is_redacted_in_the_cause(api, acme):  # noqa: F811
    secret = "tok-cause-secret-1"
    script = f"import sys; print('token is {secret}', file=sys.stderr); sys.exit(3)"
    make(acme, "leaky", command=sys.executable, args=["-c", script], env={"TOKEN": secret})
    result = api("operator")("POST", PATH.format("leaky")).json()
    assert result["reason"] == "the server exited during start-up (exit code 3)"
    assert result["cause"].endswith("\nstderr (its last lines): token is [redacted]")
    assert secret not in Server.objects.get(name="leaky").last_check_cause


@pytest.fixture
def sandboxed(settings):
    """The sandbox's network on, whatever this machine's WORKBENCH_SANDBOX says: the cause
    reads the policy, it starts nothing."""
    settings.WORKBENCH_SANDBOX = "bwrap"


def silent(command: str, **env: str) -> tuple[ServerConfig, failures.Story]:
    server = ServerConfig(name="memory", transport="stdio", command=command, env=tuple(env.items()))
    detail = "initialize: no answer within 30s"
    story = failures.Story(failures.START_TIMEOUT, "0123456789ab", detail, (), TimeoutError())
    return server, story


def test_a_registry_the_sandbox_refuses_is_named(sandboxed, settings):
    """npx's registry at an address the sandbox's network refuses (a mirror on a private
    network): the sandboxes' setting that allows it, not the remote servers' one."""
    settings.WORKBENCH_SANDBOX_EGRESS_ALLOW = []
    settings.WORKBENCH_EGRESS_ALLOW = ["10.1.2.0/24"]  # the remote servers' own: no help
    server, story = silent("npx", npm_config_registry="http://10.1.2.3:4873/")
    cause = anyio.run(causes.explain, server, story)
    lines = cause.split("\n")
    assert lines[0] == "no answer within 30s (at initialize)"
    assert lines[1] == (
        "npm's registry (10.1.2.3) resolves to 10.1.2.3 (private), which the sandbox's "
        "network refuses, so the server cannot download itself. "
        "WORKBENCH_SANDBOX_EGRESS_ALLOW=10.1.2.3 allows it (then restart the gateway: it reads "
        "its settings when it starts), or 10.1.2.3 in this server's network allowance."
    )
    assert lines[2:] == ["The server wrote nothing to stderr."]


def test_a_registry_on_the_hosts_loopback_names_host_ports(sandboxed, settings):
    """No allowance opens the host's loopback to a sandbox: the cause says what does."""
    settings.WORKBENCH_SANDBOX_EGRESS_ALLOW = ["127.0.0.0/8", "localhost"]
    server, story = silent("npx", npm_config_registry="http://127.0.0.1:4873/")
    cause = anyio.run(causes.explain, server, story)
    assert cause.split("\n")[1] == (
        "npm's registry (127.0.0.1) resolves to 127.0.0.1 (loopback): a sandbox reaches the "
        "host's loopback only at the host ports an operator names on the server (host ports, "
        "as 10.0.2.2:PORT), so the server cannot download itself from there. Point it at the "
        "registry's port through host ports, or at an address the sandbox may reach."
    )


def test_an_allowed_registry_is_not_blamed(sandboxed, settings):
    settings.WORKBENCH_SANDBOX_EGRESS_ALLOW = ["10.1.2.0/24"]
    server, story = silent("npx", npm_config_registry="http://10.1.2.3:4873/")
    cause = anyio.run(causes.explain, server, story)
    assert cause.split("\n")[1] == (
        "npx downloads the server from npm's registry before it answers: a first start can "
        "take longer than the connect timeout (WORKBENCH_CONNECT_TIMEOUT_SECONDS)."
    )
