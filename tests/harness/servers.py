"""Test servers of tests/servers/ run as processes on a free loopback port."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from tests.harness.net import free_port, listening
from tests.harness.paths import SERVERS
from tests.harness.waits import wait_until

START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0


@contextmanager
def server_process(script: str, *args: str) -> Iterator[int]:
    """tests/servers/<script> listening on a free port (yielded), stopped on the way out."""
    port = free_port()
    command = [sys.executable, str(SERVERS / script), "--port", str(port), *args]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(
            lambda: listening(port) or process.poll() is not None, START_TIMEOUT, f"port {port}"
        )
        assert process.poll() is None, f"{script} exited with {process.returncode}"
        yield port
    finally:
        process.terminate()
        process.wait(timeout=STOP_TIMEOUT)


def http_fixture_process() -> AbstractContextManager[int]:
    """The Streamable HTTP fixture server (tests/servers/http_fixture.py)."""
    return server_process("http_fixture.py")
