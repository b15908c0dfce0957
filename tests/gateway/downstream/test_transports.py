"""How a server is reached: stdio parameters (a minimal base environment, `${VAR}`
references expanded, inside the sandbox when it is on) and a remote target (headers the
gateway owns dropped)."""

from __future__ import annotations

import sys

import pytest

from mcp_gateway.downstream.envrefs import ExpansionError
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.downstream.transports import remote_target, stdio_parameters
from mcp_gateway.snapshots.servers import ServerConfig

ENVIRON = {"PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", "TOKEN": "s3cret"}


SANDBOX_OFF = SandboxPolicy(mode="none")


def test_a_remote_target_expands_references_and_drops_the_gateways_own_headers():
    server = ServerConfig(
        "api",
        "streamable_http",
        url="https://api.example.com/mcp?key=${TOKEN}",
        headers=(("Authorization", "Bearer ${TOKEN}"), ("Host", "evil"), ("TE", "trailers")),
    )
    url, headers = remote_target(server, ENVIRON)
    assert url == "https://api.example.com/mcp?key=s3cret"
    assert headers == {"Authorization": "Bearer s3cret"}


def test_a_stdio_server_gets_the_minimal_base_and_its_own_env():
    server = ServerConfig(
        "tool", "stdio", command=sys.executable, args=("-V",), env=(("API", "${TOKEN}"),)
    )
    params = stdio_parameters(server, ENVIRON, SANDBOX_OFF)
    assert params.env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "API": "s3cret",
    }
    assert sys.executable in [params.command, *params.args]


def test_inside_the_sandbox_the_command_is_bubblewrap_and_home_its_own():
    server = ServerConfig("tool", "stdio", command=sys.executable, args=("-V",))
    policy = SandboxPolicy.from_settings()
    params = stdio_parameters(server, ENVIRON, policy)
    if not policy.enabled:
        pytest.skip("the sandbox is off in this run (WORKBENCH_SANDBOX=none)")
    assert params.command == policy.bwrap
    assert params.env["HOME"] == "/home/server"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"command": "no-such-command-here"}, "command not found: no-such-command-here"),
        ({"command": sys.executable, "cwd": "/no/such/dir"}, "working directory does not exist"),
        ({"command": "${MISSING}"}, "MISSING"),
    ],
)
def test_what_cannot_be_started_is_said_before_anything_starts(fields, said):
    with pytest.raises(ExpansionError, match=said):
        stdio_parameters(ServerConfig("tool", "stdio", **fields), ENVIRON, SANDBOX_OFF)
