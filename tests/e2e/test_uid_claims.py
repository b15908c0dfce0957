"""Two installations on one host never share sandbox uids (issue 20): tenant 3 of one and
tenant 3 of another would run as one host uid (RLIMIT_NPROC, file ownership and signals
crossing). A gateway whose database is not the one that claimed its uid base refuses to
start, saying which setting and which installation, in one line (no traceback). A database
deleted and made again (starting over, issue 31) starts, once no gateway of the old one runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.deployment import DATABASE, START_TIMEOUT, Deployment
from tests.harness.net import free_port
from tests.harness.paths import ROOT
from tests.harness.procs import kill_tree

# Gateways as processes on SQLite files of their own: run once (the PostgreSQL
# pass under make test: once_pg, so that both passes take about as long).
pytestmark = pytest.mark.once_pg

INSTALLATION = "from toolboxes.installation import installation_id; print(installation_id())"


@pytest.fixture
def deployments() -> Iterator[list[Deployment]]:
    made: list[Deployment] = []
    yield made
    for deployment in made:
        deployment.stop_all()


def refused_start(deployment: Deployment, **env: str) -> tuple[int, str]:
    """Start a gateway expected to refuse: its exit status and stderr."""
    command = [sys.executable, "-m", "uvicorn", "workbench_site.asgi:application"]
    process = subprocess.Popen(
        [*command, "--port", str(free_port())],
        env={**deployment.env, **env},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deployment.processes.append(process)  # killed at the end if it did not refuse
    _, stderr = process.communicate(timeout=START_TIMEOUT)
    return process.returncode, stderr


def said_once(stderr: str) -> str:
    """The refusal as uvicorn logs it: one line, then uvicorn's own, and no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    failed = lines.index("ERROR:    Application startup failed. Exiting.")
    assert lines[failed - 1].startswith("ERROR:    "), stderr
    return lines[failed - 1].removeprefix("ERROR:    ")


def test_a_second_installation_on_one_uid_base_refuses_to_start(deployments, tmp_path: Path):
    claims = tmp_path / "uid-claims"
    first, second = (
        Deployment(tmp_path / name, env_extra={"WORKBENCH_SANDBOX_UID_CLAIMS_DIR": str(claims)})
        for name in ("a", "b")
    )
    deployments.extend([first, second])
    for deployment in (first, second):
        deployment.workdir.mkdir()
        deployment.migrate()
    first.start_gateway("a")
    first_id = first.shell(INSTALLATION).split()[-1]
    second_id = second.shell(INSTALLATION).split()[-1]
    assert first_id != second_id

    status, stderr = refused_start(second)
    assert status != 0
    assert said_once(stderr) == (
        "WORKBENCH_SANDBOX_UID_BASE=200000 is claimed on this host by another installation "
        f"({first_id}, database sqlite {first.workdir / DATABASE}; claim file "
        f"{claims}/200000.json): its tenants would run as the same uids as this "
        f"installation's ({second_id}, database sqlite {second.workdir / DATABASE}). Give "
        "each installation a WORKBENCH_SANDBOX_UID_BASE of its own, or retire the claim with "
        "`manage.py retire_uid_claim` if the other installation is gone for good."
    )

    # A base of its own, and it starts; the first installation starts again on its own.
    second.env_extra["WORKBENCH_SANDBOX_UID_BASE"] = "300000"
    second.start_gateway("b")
    first.start_gateway("a-again")
    assert sorted(p.name for p in claims.iterdir()) == ["200000.json", "300000.json"]


def test_without_the_sandbox_no_uid_is_claimed(deployments, tmp_path: Path):
    claims = tmp_path / "uid-claims"
    deployment = Deployment(
        tmp_path / "a",
        env_extra={"WORKBENCH_SANDBOX_UID_CLAIMS_DIR": str(claims), "WORKBENCH_SANDBOX": "none"},
    )
    deployments.append(deployment)
    deployment.workdir.mkdir()
    deployment.migrate()
    deployment.start_gateway("a")
    assert not claims.exists()


def test_a_database_made_anew_starts_once_the_old_ones_gateway_stopped(deployments, tmp_path):
    """`rm workbench.sqlite3 && make run`: the new database is a new installation, and the
    old one's claim is retired with a warning; not while a gateway of the old one runs."""
    claims = tmp_path / "uid-claims"
    deployment = Deployment(
        tmp_path / "a", env_extra={"WORKBENCH_SANDBOX_UID_CLAIMS_DIR": str(claims)}
    )
    deployments.append(deployment)
    deployment.workdir.mkdir()
    deployment.migrate()
    old_gateway, _, _ = deployment.start_gateway("old")
    old_id = deployment.shell(INSTALLATION).split()[-1]
    database = deployment.workdir / DATABASE
    for path in deployment.workdir.glob(f"{DATABASE}*"):  # its WAL files too
        path.unlink()  # the old gateway still has them open, and still runs
    deployment.migrate()
    new_id = deployment.shell(INSTALLATION).split()[-1]
    assert new_id != old_id

    status, stderr = refused_start(deployment)
    assert status != 0
    assert said_once(stderr) == (
        f"WORKBENCH_SANDBOX_UID_BASE=200000 is claimed on this host by installation {old_id}, "
        f"whose database sqlite {database} is now this installation's ({new_id}): it was made "
        f"anew, but a gateway of it still runs (it holds the claim file {claims}/200000.json). "
        "Stop that gateway, then start this one."
    )

    kill_tree(old_gateway)
    _, _, log = deployment.start_gateway("new")
    assert (
        f"Retired the uid claim of installation {old_id}: its database sqlite {database} is "
        f"now this installation's ({new_id}): it was made anew. WORKBENCH_SANDBOX_UID_BASE="
        f"200000 is this installation's ({new_id}) now"
    ) in log.read_text()
    assert f'"installation": "{new_id}"' in (claims / "200000.json").read_text()
