"""Gateways as real processes (`uvicorn workbench_site.asgi:application`), for tests of
shutdown and of several processes sharing one database and one store, and for the
benchmarks. Free of Django imports: the processes configure themselves."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_FERNET_KEY = "ZmDfcTF7_60GrrY167zsiPd67pEvs0aGOv2oasOM1Pg="


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """A bounded wait for a condition, failing with a clear message."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"Timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Deployment:
    """One database (SQLite file) and one cache, shared by the processes started from it."""

    workdir: Path
    cache_url: str = "locmemcache://workbench"
    env_extra: dict[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "DEBUG": "true",
            "DATABASE_URL": f"sqlite:///{self.workdir / 'gateway.sqlite3'}",
            "CACHE_URL": self.cache_url,
            "SECRET_KEY": "process-test",
            "ENCRYPTION_KEYS": TEST_FERNET_KEY,
            "DJANGO_SETTINGS_MODULE": "workbench_site.settings",
        }
        env.pop("TEST_DATABASE_URL", None)
        return env | self.env_extra

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def shell(self, script: str) -> str:
        return self.manage("shell", "-c", script)

    def start_gateway(
        self, name: str = "gateway", *options: str
    ) -> tuple[subprocess.Popen[bytes], str, Path]:
        port = free_port()
        log = self.workdir / f"{name}.log"
        command = [sys.executable, "-m", "uvicorn", "workbench_site.asgi:application"]
        process = subprocess.Popen(
            [*command, "--port", str(port), *options],
            env=self.env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=log.open("wb"),
        )
        self.processes.append(process)
        wait_until(lambda: listening(port) or process.poll() is not None, 30, f"{name} to listen")
        assert process.poll() is None, log.read_text()
        return process, f"http://127.0.0.1:{port}/mcp", log

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
