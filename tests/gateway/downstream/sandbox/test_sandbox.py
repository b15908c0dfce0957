"""The sandbox's rules, read off the command line it builds (nothing is started here,
except by the probe test, which starts nothing either: bubblewrap is missing there)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import anyio
import pytest

from kernel.classified import ClassifiedFailure
from mcp_gateway.downstream.sandbox.argv import HOME, sandbox_argv
from mcp_gateway.downstream.sandbox.host_files import command_files
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy, exit_reason
from mcp_gateway.downstream.sandbox.probe import probe
from mcp_gateway.snapshots.sandbox import Limits, Mount, SandboxSpec
from tests.harness.tenant_dirs import tenant_dir

PROJECT = str(Path(__file__).resolve().parents[4])
VENV_PYTHON = str(Path(PROJECT) / ".venv" / "bin" / "python")
FIXTURE = str(Path(PROJECT) / "tests" / "servers" / "fixture_server.py")
POLICY = SandboxPolicy(protected=(PROJECT, f"{PROJECT}/.env"))


def outer_and_rest(argv: list[str]) -> tuple[list[str], list[str]]:
    split = argv.index("--")
    return argv[:split], argv[split + 1 :]


def binds(argv: list[str], flag: str = "--ro-bind") -> list[str]:
    return [argv[index + 1] for index, word in enumerate(argv) if word == flag]


def test_namespaces_die_with_parent_and_a_private_home_and_tmp():
    argv = sandbox_argv("/usr/bin/true", [], None, SandboxSpec(owner=7), POLICY, binds=[])
    outer, rest = outer_and_rest(argv)
    for flag in ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"):
        assert flag in outer
    assert "--unshare-net" in outer  # always: a network on is given to it, filtered
    assert outer[outer.index("--proc") + 1] == "/proc"
    assert "--unshare-user" in rest and "--die-with-parent" in rest
    assert rest[rest.index("--tmpfs") : rest.index("--tmpfs") + 2] == ["--tmpfs", "/tmp"]
    assert rest[rest.index(HOME) - 1] == "--tmpfs"
    assert f"--reuid={POLICY.uid_base + 7}" in rest  # the tenant's own uid
    # Its stdin/stdout/stderr pipes are handed to that uid before it drops to it.
    assert "chown -f 200007:200007 /proc/self/fd/0" in " ".join(rest[: rest.index("setpriv")])
    assert rest[-1] == "/usr/bin/true"


def test_a_virtualenv_python_binds_the_venv_and_its_real_interpreter_not_the_project():
    found = command_files(VENV_PYTHON, [FIXTURE], None, POLICY.protected)
    assert f"{PROJECT}/.venv" in found
    real_prefix = str(Path(sys.executable).resolve().parents[1])
    assert real_prefix in found or real_prefix.startswith("/usr")
    assert FIXTURE in found  # the script named in args, alone
    assert PROJECT not in found


def test_the_gateways_files_named_as_arguments_are_not_bound():
    args = [f"{PROJECT}/.env", PROJECT, f"{PROJECT}/workbench.sqlite3", "/"]
    found = command_files("/usr/bin/cat", args, None, POLICY.protected)
    assert found == []


def test_absolute_paths_under_the_tenants_directory_are_bound_read_only():
    root = tenant_dir("acme")  # elsewhere: refused (downstream/sandbox/test_sandbox_paths.py)
    (root / "data").mkdir()
    args = [str(root / "data"), "relative"]
    found = command_files("/usr/bin/ls", args, None, (), roots=[str(root)])
    assert found == [str(root / "data")]


def test_mounts_network_off_and_limits():
    spec = SandboxSpec(
        owner=1,
        mounts=(Mount("/srv/ro"), Mount("/srv/rw", writable=True)),
        network=False,
        limits=Limits(memory_mb=64, processes=10, cpu_seconds=5, open_files=32),
    )
    argv = sandbox_argv("/usr/bin/true", [], None, spec, POLICY, binds=[])
    outer, rest = outer_and_rest(argv)
    assert "/srv/ro" in binds(outer) and binds(outer, "--bind") == ["/srv/rw"]
    assert "--unshare-net" in outer
    assert rest[:5] == [
        "prlimit",
        f"--data={64 * 1024 * 1024}:{64 * 1024 * 1024}",
        "--nproc=10:10",
        "--cpu=5:6",
        "--nofile=32:32",
    ]
    # Parents of a bind are made traversable (bwrap would make them 0700, root's).
    assert outer[outer.index("/srv") - 3 : outer.index("/srv") + 1] == [
        "--perms",
        "0755",
        "--dir",
        "/srv",
    ]


def test_binds_under_tmp_survive_the_private_tmp():
    spec = SandboxSpec(mounts=(Mount("/tmp/shared", writable=True),))
    argv = sandbox_argv("/usr/bin/true", [], None, spec, POLICY, binds=["/tmp/script.py"])
    _, rest = outer_and_rest(argv)
    inner = rest[rest.index("--unshare-user") :]
    tmpfs = inner.index("/tmp")
    assert inner.index("/tmp/script.py") > tmpfs and inner.index("/tmp/shared") > tmpfs


def test_protected_paths_inside_a_bound_directory_are_masked(tmp_path):
    secret = tmp_path / "gateway.env"
    secret.write_text("ENCRYPTION_KEYS=x")
    policy = SandboxPolicy(protected=(str(secret),))
    argv = sandbox_argv("/usr/bin/true", [], None, SandboxSpec(), policy, binds=[str(tmp_path)])
    outer, _ = outer_and_rest(argv)
    index = outer.index(str(secret))
    assert outer[index - 2 : index + 1] == ["--ro-bind", "/dev/null", str(secret)]


def test_limits_fall_back_to_the_gateways_defaults():
    mine = Limits(memory_mb=64, processes=None, cpu_seconds=None, open_files=8)
    assert mine.over(Limits(1024, 512, 3600, 1024)) == Limits(64, 512, 3600, 8)


def test_exit_reason_names_the_cpu_limit():
    limits = Limits(cpu_seconds=3)
    expected = "the server was stopped by its CPU time limit (3 s)"
    assert exit_reason(128 + signal.SIGXCPU, limits) == expected
    assert exit_reason(-signal.SIGXCPU, limits) == expected
    assert exit_reason(1, limits) is None
    assert exit_reason(128 + signal.SIGXCPU, Limits()) is None


def test_a_memory_limit_is_named_from_the_runtimes_last_words():
    limits = Limits(memory_mb=256)
    expected = "the server was stopped by its memory limit (256 MiB)"
    assert exit_reason(1, limits, ["Traceback ...", "MemoryError"]) == expected
    node = "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"
    assert exit_reason(128 + signal.SIGABRT, limits, [node]) == expected
    assert exit_reason(1, limits, ["ValueError: nope"]) is None
    assert exit_reason(0, limits, ["MemoryError"]) is None  # a clean exit names nothing
    assert exit_reason(1, Limits(), ["MemoryError"]) is None  # no limit set, none to name


def test_probe_without_bubblewrap_says_how_to_fix_it():
    policy = SandboxPolicy(bwrap="/nonexistent/bwrap")
    with pytest.raises(ClassifiedFailure) as caught:
        anyio.run(probe, policy)
    assert caught.value.phrase == (
        "the sandbox could not start: bubblewrap (/nonexistent/bwrap) is not installed; "
        "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) on a kernel that "
        "allows user namespaces, or set WORKBENCH_SANDBOX=none to run stdio servers "
        "unsandboxed"
    )
