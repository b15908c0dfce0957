"""Which host paths a sandbox may show (issue 20, findings 2 and 6): the reasons a path is
refused, and the spawn path refusing what changed since it was validated. Nothing is
started: the command line is built, or refused, as each spawn does."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from kernel.classified import ClassifiedFailure
from kernel.tenant_paths import problem, root_pattern, tenant_roots
from mcp_gateway.downstream.sandbox.argv import sandbox_argv
from mcp_gateway.downstream.sandbox.host_files import command_files
from mcp_gateway.downstream.sandbox.paths import REFUSED
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.snapshots.sandbox import Mount, SandboxSpec
from tests.harness.tenant_dirs import tenant_dir
from toolboxes.validators import validate_mounts

PROJECT = str(Path(__file__).resolve().parents[4])
FIXTURE = str(Path(PROJECT) / "tests" / "servers" / "fixture_server.py")
POLICY = SandboxPolicy(protected=(PROJECT,))
NONE = "none (WORKBENCH_SANDBOX_TENANT_ROOT is not set)"


def outside(path: str, roots: str) -> str:
    return f"{path} is outside the directories this tenant's servers may be shown: {roots}"


@pytest.fixture
def roots() -> tuple[Path, Path]:
    """A directory of tenant acme's and one of tenant beta's."""
    return tenant_dir("acme"), tenant_dir("beta")


def refusal(call) -> ClassifiedFailure:
    with pytest.raises(ClassifiedFailure) as raised:
        call()
    assert raised.value.phrase == REFUSED
    return raised.value


# The reasons


def test_a_path_outside_the_tenants_directories_names_them(roots):
    acme, beta = roots
    assert problem("/var", [str(acme)], ()) == outside("/var", str(acme))
    assert problem(str(beta), [str(acme)], ()) == outside(str(beta), str(acme))
    assert problem("/var", [], ()) == outside("/var", NONE)
    dotted = f"{acme}/../{beta.name}"  # '..' is resolved before it is compared
    assert problem(dotted, [str(acme)], ()) == outside(dotted, str(acme))


def test_a_symlink_is_refused_naming_where_it_leads(roots):
    acme, beta = roots
    (acme / "link").symlink_to(beta)
    assert problem(str(acme / "link"), [str(acme)], ()) == (
        f"{acme}/link resolves to {beta}: name the real path, without symlinks"
    )


def test_a_protected_path_or_one_holding_it_is_refused(roots):
    acme, _ = roots
    (acme / "data").mkdir()
    secret = str(acme / "data" / "gateway.env")
    assert problem(str(acme / "data"), [str(acme)], [secret]) == (
        f"{acme}/data would show the gateway's own files ({secret})"
    )


def test_a_path_below_a_directory_others_cannot_enter_is_refused(roots):
    """Finding 2: a 0644 file below a 0700 directory (as /root) would be readable through
    a bind although the tenant's uid cannot reach it on the host."""
    acme, _ = roots
    locked = acme / "locked"
    locked.mkdir(mode=0o700)
    (locked / "notes.txt").write_text("not for tenants")
    (locked / "notes.txt").chmod(0o644)
    assert problem(str(locked / "notes.txt"), [str(acme)], ()) == (
        f"{locked}/notes.txt is below {locked}, which other users cannot enter (mode 0700)"
    )
    assert problem("/root/.bashrc", None, ()) == (
        "/root/.bashrc is below /root, which other users cannot enter (mode 0700)"
    )


def test_the_setting_is_an_absolute_pattern_of_the_tenants_slug():
    assert tenant_roots("acme", "/srv/workbench/{tenant}") == ("/srv/workbench/acme",)
    assert tenant_roots("acme", "") == ()
    with pytest.raises(ImproperlyConfigured) as raised:
        root_pattern("srv/{tenant}")
    assert str(raised.value) == (
        "WORKBENCH_SANDBOX_TENANT_ROOT must be an absolute path (with {tenant} for the "
        "tenant's slug), not 'srv/{tenant}'"
    )


# At spawn


def test_an_argument_outside_the_tenants_directories_is_refused_at_spawn(roots):
    acme, beta = roots
    (beta / "notes.txt").write_text("beta's")  # a file, not a script: no command's own
    for path in ("/var", str(beta), str(beta / "notes.txt")):
        failure = refusal(
            lambda path=path: command_files("/usr/bin/ls", [path], None, (), roots=[str(acme)])
        )
        assert failure.detail == f"not bound: {outside(path, str(acme))}"


def test_an_argument_under_a_closed_directory_is_refused_at_spawn(roots):
    acme, _ = roots
    (acme / "locked").mkdir(mode=0o700)
    (acme / "locked" / "data").mkdir()
    path = str(acme / "locked" / "data")
    failure = refusal(lambda: command_files("/usr/bin/ls", [path], None, (), roots=[str(acme)]))
    assert failure.detail == (
        f"not bound: {path} is below {acme}/locked, which other users cannot enter (mode 0700)"
    )


def test_a_tenant_directory_swapped_for_a_symlink_is_refused_at_spawn(roots):
    acme, beta = roots
    (acme / "data").mkdir()
    path = str(acme / "data")
    assert command_files("/usr/bin/ls", [path], None, (), roots=[str(acme)]) == [path]
    (acme / "data").rename(acme / "data.moved")
    (acme / "data").symlink_to(beta)
    failure = refusal(lambda: command_files("/usr/bin/ls", [path], None, (), roots=[str(acme)]))
    assert failure.detail == (
        f"not bound: {path} resolves to {beta}: name the real path, without symlinks"
    )


def test_a_mount_swapped_for_a_symlink_to_a_protected_path_is_refused_at_spawn(roots):
    """Finding 6: a server with a writable mount replaces a directory in it with a
    symlink to a protected path; the next spawn of a server mounting that directory
    refuses it, rather than bind what it now leads to."""
    acme, _ = roots
    shared = acme / "shared"
    shared.mkdir()
    validate_mounts([{"path": str(shared)}])  # what the operator configured: valid
    spec = SandboxSpec(owner=1, mounts=(Mount(str(shared)),))
    assert str(shared) in sandbox_argv("/usr/bin/true", [], None, spec, POLICY, binds=[])
    shared.rename(acme / "shared.moved")
    shared.symlink_to(PROJECT)
    failure = refusal(lambda: sandbox_argv("/usr/bin/true", [], None, spec, POLICY, binds=[]))
    assert failure.detail == (
        f"mount not bound: {shared} resolves to {PROJECT}: name the real path, without symlinks"
    )


def test_a_mount_below_a_closed_directory_is_refused_at_spawn(roots):
    acme, _ = roots
    (acme / "locked").mkdir()
    (acme / "locked" / "out").mkdir()
    os.chmod(acme / "locked", 0o700)  # after it was validated
    spec = SandboxSpec(mounts=(Mount(f"{acme}/locked/out", writable=True),))
    failure = refusal(lambda: sandbox_argv("/usr/bin/true", [], None, spec, POLICY, binds=[]))
    assert failure.detail == (
        f"mount not bound: {acme}/locked/out is below {acme}/locked, which other users "
        "cannot enter (mode 0700)"
    )


def test_what_a_mount_shows_and_the_commands_own_files_are_not_refused(roots):
    acme, beta = roots
    (beta / "repo").mkdir()
    repo = str(beta / "repo")
    # An operator's mount shows it: nothing more to bind.
    assert command_files("/usr/bin/ls", [repo], None, (), roots=[str(acme)], mounts=[repo]) == []
    # A script the command runs, and the gateway's own files (skipped, never bound).
    found = command_files(sys.executable, [FIXTURE, f"{PROJECT}/.env"], None, POLICY.protected)
    assert FIXTURE in found and f"{PROJECT}/.env" not in found
    # The host's system directories are shown to every sandbox already.
    assert command_files("/usr/bin/ls", ["/usr/share", "/etc/hostname"], None, ()) == []
