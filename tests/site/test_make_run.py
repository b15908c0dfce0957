"""`make run` as a new user meets it (issues 31 and 37): it starts again after its
database is deleted, a second checkout beside it serves too, the credentials are printed
only once the gateway answers, Ctrl-C and SIGTERM end it cleanly, `make reset` says what it
removes, and a start that is refused says why in one line.

The real `make run` in copies of this checkout (its files as they are, committed or not),
with this virtualenv (`VENV=`, and `-o` so that make does not reinstall it) and the places
outside checkouts under a directory of the test's own (WORKBENCH_RUN_ROOT), not
/var/tmp/workbench-<uid>. The environment is a new user's shell, not the suite's.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.harness.deployment import migrated_template
from tests.harness.net import free_port
from tests.harness.paths import ROOT
from tests.harness.procs import kill_tree
from tests.harness.results import text_of, use
from tests.harness.waits import wait_until
from workbench_site.management import checkout as places
from workbench_site.management.commands.setup_demo import READY

# Processes on files of their own, whatever the suite's database: one pass.
pytestmark = pytest.mark.once

VENV = Path(sys.prefix)
START_TIMEOUT = 240.0  # a migration from scratch on a loaded machine included
STOP_TIMEOUT = 60.0


def copy_checkout(where: Path) -> Path:
    """This checkout's files as a clone of it would have them, with any change not yet
    committed (git ls-files: tracked, and new files not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / name)
    return where


class MakeRun:
    """`make run` in a checkout, its output (stdout and stderr) gathered as it comes."""

    def __init__(self, checkout: Path, run_root: Path, port: int) -> None:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/root"),
            "WORKBENCH_RUN_ROOT": str(run_root),
            # The sandboxes' package caches: the suite's own directory, never the host's.
            "WORKBENCH_SANDBOX_CACHE_DIR": os.environ["WORKBENCH_SANDBOX_CACHE_DIR"],
            "WORKBENCH_SANDBOX_CACHE_MB": os.environ["WORKBENCH_SANDBOX_CACHE_MB"],
        }
        self.port = port
        self.process = subprocess.Popen(
            ["make", "-o", f"{VENV}/.installed", "run", f"VENV={VENV}", f"PORT={port}"],
            cwd=checkout,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group, as a terminal's job
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def ready(self) -> tuple[str, str]:
        """Once the banner is printed: the MCP endpoint and the demo's API key."""
        wait_until(
            lambda: READY in self.lines or self.process.poll() is not None,
            START_TIMEOUT,
            "make run to print that the demo is ready",
        )
        assert READY in self.lines, self.output
        endpoint = re.search(r"MCP endpoint: (\S+)", self.output)
        key = re.search(r"Demo API key: (\S+)", self.output)
        assert endpoint and key, self.output
        return endpoint.group(1), key.group(1)

    def ended(self) -> int:
        self.process.wait(timeout=STOP_TIMEOUT)
        self.reader.join(timeout=STOP_TIMEOUT)
        return self.process.returncode

    def interrupt(self) -> None:
        """Ctrl-C: SIGINT to the whole foreground process group. make itself ends by it
        (GNU make raises the signal it got against itself once its recipe has ended), or
        with 0 when its recipe ended first: either way quietly (`cleanly`)."""
        os.killpg(self.process.pid, signal.SIGINT)
        assert self.ended() in (0, -signal.SIGINT), self.output

    def terminate(self) -> None:
        """SIGTERM to make (as `kill <pid>` does): make passes it on, and ends by it."""
        self.process.send_signal(signal.SIGTERM)
        assert self.ended() == -signal.SIGTERM, self.output


@pytest.fixture
def run_root() -> Iterator[Path]:
    """Where make run keeps what lies outside checkouts: enterable by the demo tenant's uid
    (pytest's tmp_path lies below a 0700 directory, which the sandbox refuses to show)."""
    root = Path(tempfile.mkdtemp(prefix="wb-run-root-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def checkouts() -> Iterator[list[Path]]:
    made: list[Path] = []
    yield made
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def runs() -> Iterator[list[MakeRun]]:
    started: list[MakeRun] = []
    yield started
    for run in started:
        kill_tree(run.process)


def new_checkout(checkouts: list[Path], name: str, *, migrated: bool = False) -> Path:
    """A copy of this checkout in a directory named `name` (its demo directory's name).
    `migrated`: with a freshly migrated database in place (what `make run`'s migrate makes
    from scratch, in milliseconds instead of tens of seconds)."""
    parent = Path(tempfile.mkdtemp(prefix="wb-checkout-"))
    checkouts.append(parent)
    checkout = copy_checkout(parent / name)
    if migrated:
        shutil.copyfile(migrated_template(), checkout / "workbench.sqlite3")
    return checkout


def demo_repository(run_root: Path, checkout: Path) -> Path:
    """The checkout's own demo repository (workbench_site/management/checkout.py), made."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(places.RUN_ROOT_ENV, str(run_root))
        repo = places.checkout_dir(checkout) / "repo"
    assert (repo / ".git").is_dir()
    return repo


def serves_the_demo(endpoint: str, key: str, repo: Path) -> str:
    """The demo as its banner says: a session, its toolbox opened (both servers started in
    their sandboxes), the git server's last commit of the checkout's own repository."""

    async def session() -> str:
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
            streamable_http_client(endpoint, http_client=http) as (read, write, *_),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            opened = await client.call_tool("open_toolbox", {"toolbox": "demo"})
            assert not opened.is_error, text_of(opened)
            log = await client.call_tool(
                "use_tool", use("demo", "git", "git_log", {"repo_path": str(repo)})
            )
            assert not log.is_error, text_of(log)
            return text_of(log)

    return asyncio.run(session())


def serves_the_toolbox(output: str, key: str) -> list[str]:
    """The banner's toolbox endpoint: the demo toolbox's tools under their own names."""
    found = re.search(r"Toolbox endpoint: (\S+)", output)
    assert found, output
    assert f"claude mcp add --transport http workbench-demo {found.group(1)} " in output

    async def session() -> list[str]:
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
            streamable_http_client(found.group(1), http_client=http) as (read, write, *_),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            return [tool.name for tool in (await client.list_tools()).tools]

    return asyncio.run(session())


def cleanly(run: MakeRun) -> str:
    """Its output, asserting that it ended as a clean stop does: no error of make's, no
    traceback, uvicorn's graceful end."""
    assert "make: ***" not in run.output, run.output
    assert "Traceback" not in run.output, run.output
    assert "Application shutdown complete." in run.output, run.output
    return run.output


def make_reset(checkout: Path, run_root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-o", f"{VENV}/.installed", "reset", f"VENV={VENV}"],
        cwd=checkout,
        env={"PATH": os.environ["PATH"], "WORKBENCH_RUN_ROOT": str(run_root)},
        capture_output=True,
        text=True,
        timeout=STOP_TIMEOUT,
    )


def base_of(checkout: Path) -> int:
    """The uid base make run wrote into the checkout's .env."""
    env = (checkout / ".env").read_text()
    found = re.search(r"^WORKBENCH_SANDBOX_UID_BASE=(\d+)$", env, re.M)
    assert found, env
    return int(found.group(1))


def test_two_checkouts_serve_side_by_side_and_one_starts_again_from_scratch(
    run_root, checkouts, runs
):
    """One scenario (each start costs seconds): the first checkout serves; a second beside
    it, given the first's uid base, is refused in one line; with its own, it serves too;
    both stop cleanly; the first, its database deleted, starts again; `make reset`."""
    # What this runs is what the README's opening block tells a newcomer to type.
    opening = (ROOT / "README.md").read_text().split("```")[1]
    assert "make run " in opening and "make reset " in opening
    first_checkout = new_checkout(checkouts, "workbench", migrated=True)
    second_checkout = new_checkout(checkouts, "workbench", migrated=True)  # the same name
    first = MakeRun(first_checkout, run_root, free_port())
    runs.append(first)
    first.ready()
    # The banner comes once the gateway answers, never before its start is complete.
    assert first.output.index("Application startup complete.") < first.output.index(READY)
    claim = run_root / "uid-claims" / f"{base_of(first_checkout)}.json"
    busy = make_reset(first_checkout, run_root)
    assert busy.returncode != 0
    assert (
        f"CommandError: A gateway of this checkout is running (it holds its uid claim, {claim}): "
        "stop it (Ctrl-C where make run runs), then reset."
    ) in busy.stderr.splitlines(), busy.stderr
    assert (first_checkout / "workbench.sqlite3").exists()

    # The second with the first's uid base: refused by the claim, in one line, no banner.
    secrets = (first_checkout / ".env").read_text().split("# This checkout's own")[0]
    (second_checkout / ".env").write_text(
        f"{secrets}WORKBENCH_SANDBOX_UID_BASE={base_of(first_checkout)}\n"
    )
    clash = MakeRun(second_checkout, run_root, free_port())
    runs.append(clash)
    assert clash.ended() == 2  # make's status for a recipe that failed
    refusal = [line for line in clash.lines if "is claimed on this host" in line]
    assert len(refusal) == 1, clash.output
    assert refusal[0].startswith(
        f"ERROR:    WORKBENCH_SANDBOX_UID_BASE={base_of(first_checkout)} is claimed on this "
        "host by another installation ("
    ), clash.output
    assert "Traceback" not in clash.output
    assert READY not in clash.output

    # Its own base (make run adds it to .env), its own demo directory: both serve at once.
    (second_checkout / ".env").write_text(
        (second_checkout / ".env")
        .read_text()
        .replace(f"WORKBENCH_SANDBOX_UID_BASE={base_of(first_checkout)}\n", "")
    )
    second = MakeRun(second_checkout, run_root, free_port())
    runs.append(second)
    endpoint, key = second.ready()
    repo = demo_repository(run_root, second_checkout)
    assert repo != demo_repository(run_root, first_checkout)
    assert base_of(second_checkout) != base_of(first_checkout)
    assert "Demo repository" in serves_the_demo(endpoint, key, repo)
    assert first.process.poll() is None  # still serving beside it
    assert sorted(p.name for p in (run_root / "uid-claims").iterdir()) == sorted(
        f"{base_of(c)}.json" for c in (first_checkout, second_checkout)
    )
    second.interrupt()  # Ctrl-C
    cleanly(second)
    first.interrupt()
    cleanly(first)

    # The usual way to start over.
    database = first_checkout / "workbench.sqlite3"
    database.unlink()
    again = MakeRun(first_checkout, run_root, first.port)
    runs.append(again)
    endpoint, key = again.ready()
    assert "Applying toolboxes.0001_initial... OK" in again.output  # migrated from scratch
    assert "Retired the uid claim of installation " in again.output
    repo = demo_repository(run_root, first_checkout)
    assert "Demo repository" in serves_the_demo(endpoint, key, repo)
    assert {"time__get_current_time", "git__git_log"} <= set(serves_the_toolbox(again.output, key))
    again.terminate()
    cleanly(again)

    reset = make_reset(first_checkout, run_root)
    assert reset.returncode == 0, reset.stderr
    assert reset.stdout == (
        "Starting this checkout again from scratch. Removing:\n"
        f"  the database: {database}\n"
        f"  the demo's credentials: {first_checkout / '.demo-credentials.json'}\n"
        f"  the demo's files: {repo.parent}\n"
        f"  the shared store: {first_checkout / '.workbench-store'}\n"
        f"  the uid claim: {claim}\n"
        "Kept:\n"
        "  .env (this checkout's secrets and settings) and .venv\n"
        "Done: make run starts this checkout again from scratch.\n"
    )
    for path in (database, first_checkout / ".demo-credentials.json", repo.parent, claim):
        assert not path.exists(), path
    assert (first_checkout / ".env").exists()
    assert demo_repository(run_root, second_checkout)  # the other checkout's, untouched
