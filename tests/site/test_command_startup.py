"""A manage.py command that connects nothing loads no MCP SDK (a second of start-up each:
`revoke_api_key` beside a running gateway, `make run`'s set-up, every test's commands).
The SDK is loaded by the first connection or check instead (mcp_gateway.downstream.check,
mcp_gateway.downstream.failures, kernel.pins, mcp_gateway.observe.telemetry import it lazily)."""

import os
import subprocess
import sys

from tests.harness.keys import TEST_FERNET_KEY
from tests.harness.paths import ROOT

LOADED_SDK = (
    "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
)


def test_a_command_with_the_admin_loaded_imports_no_sdk(tmp_path):
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", LOADED_SDK],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "WORKBENCH_ENV_FILE": os.devnull,
            "SECRET_KEY": "s",
            "ENCRYPTION_KEYS": TEST_FERNET_KEY,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "WORKBENCH_STORE_DIR": str(tmp_path / "store"),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # The admin (and so every model admin module) is loaded by `shell`: django.setup().
    assert done.stdout.strip().splitlines()[-1] == "[]"
