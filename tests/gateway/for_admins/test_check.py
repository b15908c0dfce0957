"""check_server: the gateway's connect path, run once for an admin: tools or a failure."""

import sys
from typing import Any

import anyio

from kernel.check_results import CheckResult
from kernel.tenant_paths import tenant_roots
from mcp_gateway.for_admins.server_check import check_server
from mcp_gateway.snapshots.sandbox import SandboxSpec
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef
from tests.harness.paths import SHIFTING_SERVER
from tests.harness.tenant_dirs import tenant_dir


def check_server_sync(server: ServerConfig, ref: str, **options: Any) -> CheckResult:
    return anyio.run(lambda: check_server(server, ServerRef(*ref.split("/")), **options))


def test_a_server_that_connects_lists_its_tools():
    shown = tenant_dir("acme")  # a file the sandbox may show: under the tenant's root
    (shown / "d.txt").write_text("Delete nothing")
    server = ServerConfig(
        "fs",
        "stdio",
        command=sys.executable,
        args=(SHIFTING_SERVER, str(shown / "d.txt")),
        sandbox=SandboxSpec(roots=tenant_roots("acme")),
    )
    result = check_server_sync(server, "acme/dev/fs")
    assert result.ok and result.reason == ""
    assert [tool["name"] for tool in result.tools] == ["echo", "delete_all", "exit"]
    assert result.tools[1]["description"] == "Delete nothing"


def test_a_failing_server_gives_the_classified_reason_and_its_stderr_tail():
    server = ServerConfig(
        "broken",
        "stdio",
        command=sys.executable,
        args=("-c", "import sys; print('no config file here', file=sys.stderr); sys.exit(2)"),
    )
    result = check_server_sync(server, "acme/dev/broken", connect_timeout=20)
    assert not result.ok and result.tools == []
    assert result.reason == "the server exited during start-up (exit code 2)"
    assert result.incident
    assert "no config file here" in "\n".join(result.stderr_tail)
