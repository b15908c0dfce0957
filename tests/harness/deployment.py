"""Gateways as real processes (`uvicorn workbench_site.asgi:application`), for tests of
shutdown and of several processes sharing one database and one store, and for the
benchmarks. Free of Django imports: the processes configure themselves."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness.keys import TEST_FERNET_KEY
from tests.harness.net import free_port, listening
from tests.harness.paths import ROOT
from tests.harness.procs import kill_tree
from tests.harness.waits import wait_until

# Never handed to a gateway process: it would hide a blocking ORM call on the event loop.
ASYNC_UNSAFE = "DJANGO_ALLOW_ASYNC_UNSAFE"
# A bound, not a pace: on a machine others load, a gateway once took over 30 s to listen.
START_TIMEOUT = 120.0
DATABASE = "gateway.sqlite3"
# A migrated database, copied by each deployment: a migration costs seconds, a copy
# milliseconds.
_TEMPLATES = Path(tempfile.gettempdir()) / "workbench-test-templates"


def _migrations_digest() -> str:
    """What a template depends on: every migration file and the installed Django."""
    digest = hashlib.sha256(django_version().encode())
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def django_version() -> str:
    from importlib import metadata

    return metadata.version("Django")


def migrated_template() -> Path:
    """The template for the migrations as they are, made under a lock by whichever
    process gets there first."""
    folder = _TEMPLATES / _migrations_digest()
    template = folder / DATABASE
    if template.exists():
        return template
    _TEMPLATES.mkdir(parents=True, exist_ok=True)
    with (_TEMPLATES / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            building = Deployment(Path(tempfile.mkdtemp(prefix="wb-migrating-", dir=_TEMPLATES)))
            building.manage("migrate", "-v0")
            folder.mkdir(exist_ok=True)
            os.replace(building.workdir / DATABASE, template)
            shutil.rmtree(building.workdir, ignore_errors=True)
    return template


def process_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a child gateway or command: without the test
    database URL (the child configures its own) and without the async-safety opt-out."""
    env = {**os.environ, **(extra or {})}
    for name in ("TEST_DATABASE_URL", ASYNC_UNSAFE):
        env.pop(name, None)
    return env


@dataclass
class Deployment:
    """One database (SQLite file), one cache and one store directory, shared by the
    processes started from it and by nothing else (each test, each xdist worker, its own)."""

    workdir: Path
    cache_url: str = ""  # empty: the product's default, the embedded store in workdir/store
    env_extra: dict[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return process_env(
            {
                "DEBUG": "true",
                "DATABASE_URL": f"sqlite:///{self.workdir / DATABASE}",
                "CACHE_URL": self.cache_url,
                "WORKBENCH_STORE_DIR": str(self.workdir / "store"),
                # Its database is an installation of its own: so are its uid claims.
                "WORKBENCH_SANDBOX_UID_CLAIMS_DIR": str(self.workdir / "uid-claims"),
                "SECRET_KEY": "process-test",
                # SIGTERM stops at once (tests/e2e/test_shutdown.py drains on purpose).
                "WORKBENCH_DRAIN_SECONDS": "0",
                "ENCRYPTION_KEYS": TEST_FERNET_KEY,
                "DJANGO_SETTINGS_MODULE": "workbench_site.settings",
                **self.env_extra,
            }
        )

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

    def migrate(self) -> None:
        """The deployment's database, migrated: a copy of the template that the first
        process to need it made (shared by xdist workers and by later runs, keyed by the
        migrations it was made from)."""
        shutil.copyfile(migrated_template(), self.workdir / DATABASE)

    def shell(self, script: str) -> str:
        return self.manage("shell", "-c", script)

    def start_gateway(
        self, name: str = "gateway", *options: str, port: int | None = None
    ) -> tuple[subprocess.Popen[bytes], str, Path]:
        """A gateway process (uvicorn) on `port` (default: a free one); its log appends."""
        port = port or free_port()
        log = self.workdir / f"{name}.log"
        command = [sys.executable, "-m", "uvicorn", "workbench_site.asgi:application"]
        process = subprocess.Popen(
            [*command, "--port", str(port), *options],
            env=self.env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=log.open("ab"),
        )
        self.processes.append(process)
        wait_until(
            lambda: listening(port) or process.poll() is not None,
            START_TIMEOUT,
            f"{name} to listen",
        )
        assert process.poll() is None, log.read_text()
        return process, f"http://127.0.0.1:{port}/mcp", log

    def stop_all(self) -> None:
        """Kill every process started here, with its workers and downstream servers."""
        for process in self.processes:
            kill_tree(process)
