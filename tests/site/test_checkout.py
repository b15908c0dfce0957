"""A checkout's own places and uids for `make run` (issue 37), `make reset` and the
operator's retirement of a uid claim (issue 31). `make run` itself: tests/site/test_make_run.py."""

from __future__ import annotations

import json
import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from mcp_gateway.downstream.sandbox.uid_claims import claim_uid_base
from toolboxes.installation import describe_database
from workbench_site.management import checkout
from workbench_site.management.checkout import (
    FIRST_BASE,
    SPAN,
    NotOwnDirectory,
    add_missing,
    checkout_dir,
    own_directory,
    uid_base,
)


@pytest.fixture
def run_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "run-root"
    monkeypatch.setenv(checkout.RUN_ROOT_ENV, str(root))
    return root


def test_each_checkout_has_its_own_directory_and_uid_base(run_root):
    first, second = Path("/home/ann/workbench"), Path("/home/ann/src/workbench")
    assert checkout_dir(first).parent == checkout_dir(second).parent == run_root
    assert checkout_dir(first).name.startswith("workbench-")
    assert checkout_dir(first) != checkout_dir(second)
    assert uid_base(first) != uid_base(second)
    for base in (uid_base(first), uid_base(second)):
        # Far from the default (200000), a whole span per checkout, below 2**31.
        assert base >= FIRST_BASE and (base - FIRST_BASE) % SPAN == 0
        assert base + SPAN <= 2**31
    assert uid_base(first) == uid_base(Path("/home/ann/workbench"))  # stable


def test_without_a_run_root_the_places_are_this_users_in_var_tmp(monkeypatch):
    monkeypatch.delenv(checkout.RUN_ROOT_ENV, raising=False)
    assert checkout.claims_dir() == Path(f"/var/tmp/workbench-{os.getuid()}/uid-claims")


def test_the_sandbox_lines_are_added_to_env_once(run_root, tmp_path):
    env = tmp_path / ".env"
    env.write_text("DEBUG=true\nWORKBENCH_SANDBOX_UID_CLAIMS_DIR=/srv/claims\n")
    project = Path("/home/ann/workbench")
    assert add_missing(env, project) == [f"WORKBENCH_SANDBOX_UID_BASE={uid_base(project)}"]
    assert add_missing(env, project) == []
    assert env.read_text() == (
        "DEBUG=true\nWORKBENCH_SANDBOX_UID_CLAIMS_DIR=/srv/claims\n"
        "# This checkout's own sandbox uids, claimed beside this user's other checkouts' "
        f"(make run)\nWORKBENCH_SANDBOX_UID_BASE={uid_base(project)}\n"
    )


def test_a_place_that_is_a_link_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(NotOwnDirectory) as refused:
        own_directory(tmp_path / "link")
    assert str(refused.value) == (
        f"{tmp_path}/link is not a directory of this user's own (a link, or another user's): "
        "remove it, or set WORKBENCH_RUN_ROOT to a directory of yours."
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory away")
def test_a_place_another_user_made_first_is_refused(tmp_path):
    (tmp_path / "taken").mkdir()
    os.chown(tmp_path / "taken", 4242, -1)
    with pytest.raises(NotOwnDirectory):
        own_directory(tmp_path / "taken")


def test_a_made_place_is_enterable_by_the_demos_servers(tmp_path):
    umask = os.umask(0o077)  # a private umask: the place is made 0755 all the same
    try:
        made = own_directory(tmp_path / "a" / "b")
    finally:
        os.umask(umask)
    assert made.stat().st_mode & 0o777 == 0o755


def run(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def test_reset_removes_the_checkouts_own_and_keeps_what_lies_elsewhere(
    run_root, tmp_path, settings
):
    """The suite's database and store lie outside this (pretend) checkout: kept. The claims
    directory is the test's own: a gateway test before it in this worker may have claimed
    the base for this database in the process's one."""
    project = tmp_path / "checkout"
    project.mkdir()
    settings.BASE_DIR = project
    settings.WORKBENCH_SANDBOX_UID_CLAIMS_DIR = str(tmp_path / "uid-claims")
    (project / ".demo-credentials.json").write_text("{}")
    demo = checkout_dir(project)
    (demo / "repo").mkdir(parents=True)
    assert run("reset_demo") == (
        "Starting this checkout again from scratch. Removing:\n"
        f"  the demo's credentials: {project}/.demo-credentials.json\n"
        f"  the demo's files: {demo}\n"
        "Kept:\n"
        f"  the database ({describe_database()}): not a file of this checkout\n"
        f"  the shared store ({settings.WORKBENCH_STORE_DIR}): not a directory of this "
        "checkout\n"
        "  .env (this checkout's secrets and settings) and .venv\n"
        "Done: make run starts this checkout again from scratch.\n"
    )
    assert not demo.exists() and not (project / ".demo-credentials.json").exists()
    assert "Nothing to remove: this checkout has no database or demo yet." in run("reset_demo")


def test_reset_leaves_a_claim_another_installation_made(run_root, tmp_path, settings):
    settings.BASE_DIR = tmp_path
    # A claims directory of the test's own: a gateway test before it in this worker may
    # have claimed the base in the process's one.
    settings.WORKBENCH_SANDBOX_UID_CLAIMS_DIR = str(tmp_path / "uid-claims")
    claims = Path(settings.WORKBENCH_SANDBOX_UID_CLAIMS_DIR)
    base = settings.WORKBENCH_SANDBOX_UID_BASE
    claim_uid_base(claims, base, "c" * 32, "sqlite /srv/other.sqlite3").close()
    said = run("reset_demo")
    assert (
        f"  {claims}/{base}.json: another installation's ({'c' * 32}, database sqlite "
        "/srv/other.sqlite3)\n"
    ) in said
    assert (claims / f"{base}.json").exists()
    (claims / f"{base}.json").unlink()


def test_the_operator_retires_a_claim(settings):
    claims = Path(settings.WORKBENCH_SANDBOX_UID_CLAIMS_DIR)
    base = 4_000_000  # a base of this test's own in the process's claims directory
    assert run("retire_uid_claim", "--base", str(base)) == (
        f"No claim of WORKBENCH_SANDBOX_UID_BASE={base} in {claims}: nothing to retire.\n"
    )
    held = claim_uid_base(claims, base, "d" * 32, "postgresql wb on db.internal:5432")
    with pytest.raises(CommandError) as refused:
        run("retire_uid_claim", "--base", str(base))
    assert str(refused.value) == (
        f"The claim of WORKBENCH_SANDBOX_UID_BASE={base} ({'d' * 32}, database postgresql wb "
        f"on db.internal:5432; claim file {claims}/{base}.json) is held by a running gateway "
        "of that installation. Stop it first."
    )
    held.close()
    assert json.loads((claims / f"{base}.json").read_text())["installation"] == "d" * 32
    assert run("retire_uid_claim", "--base", str(base)) == (
        f"Retired the claim of WORKBENCH_SANDBOX_UID_BASE={base} ({'d' * 32}, database "
        "postgresql wb on db.internal:5432): the next gateway to start with that base claims "
        "it.\n"
    )
    assert not (claims / f"{base}.json").exists()
