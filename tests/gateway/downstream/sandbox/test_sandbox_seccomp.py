"""The sandbox's seccomp filter (mcp_gateway/downstream/sandbox/seccomp.py): the program
loaded into a child process of the test's (no sandbox: the filter alone), what it refuses
and what it lets through; how the command line hands it to the inner bubblewrap; and what
a gateway without libseccomp says. The end-to-end attempts are
tests/e2e/test_sandbox_seccomp.py."""

from __future__ import annotations

import ctypes.util
import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from kernel.classified import ClassifiedFailure
from mcp_gateway.downstream.sandbox import seccomp
from mcp_gateway.downstream.sandbox.argv import SECCOMP_FILE, sandbox_argv, seccomp_file
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.snapshots.sandbox import SandboxSpec

# A child that installs the filter on itself (as bubblewrap does: no_new_privs, then
# SECCOMP_MODE_FILTER), then makes raw system calls and prints what each returned.
CHILD = r"""
import ctypes, errno, json, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
program = sys.stdin.buffer.read()

class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
fprog = Fprog(len(program) // 8, program)
assert libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0, ctypes.get_errno()  # SECCOMP

def call(nr, *args):
    result = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]

def forked(nr, flags):
    pid = libc.syscall(ctypes.c_long(nr), ctypes.c_long(flags), 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    if pid < 0:
        return errno.errorcode[ctypes.get_errno()]
    os.waitpid(pid, 0)
    return "ok"

ran = []
thread = threading.Thread(target=lambda: ran.append(1))
thread.start(); thread.join()
print(json.dumps({
    "unshare(CLONE_NEWUSER)": call(272, 0x10000000),
    "unshare(CLONE_NEWNET)": call(272, 0x40000000),
    "unshare(CLONE_NEWTIME)": call(272, 0x80),
    "unshare(CLONE_FILES)": call(272, 0x400),
    "clone(CLONE_NEWUSER)": forked(56, 0x10000000 | 17),
    "clone(CLONE_NEWNS)": forked(56, 0x00020000 | 17),
    "clone(SIGCHLD)": forked(56, 17),
    "clone3": call(435, 0, 0),
    "keyctl": call(250, 0, -3, 0),
    "ptrace": call(101, 0, 0, 0, 0),
    "bpf": call(321, 0, 0, 0),
    "mount": call(165, 0, 0, 0, 0, 0),
    "io_uring_setup": call(425, 1, 0),
    "getpid": call(39),
    "a thread": "ok" if ran else "did not run",
    "a subprocess": "ok" if os.system("true") == 0 else "failed",
}))
"""


@pytest.fixture
def loaded() -> dict[str, str]:
    """What the child's calls returned under the filter."""
    if platform.machine() != "x86_64":
        pytest.skip("the child's system call numbers are x86_64's")
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=seccomp.program(),
        capture_output=True,
        timeout=30,
        check=True,
    )
    return json.loads(done.stdout)


def test_namespaces_are_refused_by_their_flags_and_clone3_is_absent(loaded):
    assert {name: loaded[name] for name in loaded if "CLONE" in name or "clone" in name} == {
        "unshare(CLONE_NEWUSER)": "EPERM",
        "unshare(CLONE_NEWNET)": "EPERM",
        "unshare(CLONE_NEWTIME)": "EPERM",
        "unshare(CLONE_FILES)": "ok",  # no namespace: let through
        "clone(CLONE_NEWUSER)": "EPERM",
        "clone(CLONE_NEWNS)": "EPERM",
        "clone(SIGCHLD)": "ok",  # fork
        "clone3": "ENOSYS",  # the C library falls back to clone
    }


def test_the_kernels_attack_surface_is_refused_and_the_rest_allowed(loaded):
    refused = ("keyctl", "ptrace", "bpf", "mount", "io_uring_setup")
    assert {name: loaded[name] for name in refused} == dict.fromkeys(refused, "EPERM")
    assert {name: loaded[name] for name in ("getpid", "a thread", "a subprocess")} == {
        "getpid": "ok",
        "a thread": "ok",
        "a subprocess": "ok",
    }


def test_the_program_is_built_once():
    assert seccomp.program() is seccomp.program()
    assert len(seccomp.program()) % 8 == 0  # sock_filter instructions


def test_the_inner_bubblewrap_is_handed_the_filter_and_closes_it():
    spec = SandboxSpec(owner=3)
    argv = sandbox_argv("/usr/bin/true", [], None, spec, SandboxPolicy(), binds=[], seccomp="/f")
    split = argv.index("--")
    outer, rest = argv[:split], argv[split + 1 :]
    assert outer[outer.index("/f") - 1 : outer.index("/f") + 2] == ["--ro-bind", "/f", SECCOMP_FILE]
    [handover] = [word for word in rest if word.startswith("chown")]
    assert handover.endswith(f'exec "$@" 3<{SECCOMP_FILE}')  # opened as root, outside
    inner = rest[rest.index("--unshare-user") - 1 :]
    assert inner[inner.index("--seccomp") + 1] == "3"
    assert inner.index("--seccomp") < inner.index("--", inner.index("--seccomp"))
    bare = sandbox_argv("/usr/bin/true", [], None, spec, SandboxPolicy(), binds=[])
    assert "--seccomp" not in bare and not any(SECCOMP_FILE in word for word in bare)


def test_the_filter_is_a_support_file_unless_the_policy_measures_without():
    path = seccomp_file(SandboxPolicy())
    assert path is not None and Path(path).read_bytes() == seccomp.program()
    assert Path(path).stat().st_mode & 0o777 == 0o644  # its directory is root's, 0700
    assert seccomp_file(SandboxPolicy(seccomp=False)) is None


def test_without_libseccomp_the_sandbox_says_how_to_fix_it(monkeypatch):
    """pyseccomp's import looks libseccomp.so.2 up (ctypes.util.find_library): not found."""
    found = ctypes.util.find_library
    monkeypatch.setattr(
        ctypes.util, "find_library", lambda name: None if name == "seccomp" else found(name)
    )
    monkeypatch.delitem(sys.modules, "pyseccomp")
    seccomp.program.cache_clear()
    try:
        with pytest.raises(ClassifiedFailure) as caught:
            seccomp.program()
    finally:
        seccomp.program.cache_clear()
    assert str(caught.value) == (
        "the sandbox could not start; install libseccomp (Debian/Ubuntu: apt-get install "
        "libseccomp2) for the sandbox's seccomp filter, or set WORKBENCH_SANDBOX=none to run "
        "stdio servers unsandboxed"
    )
    assert caught.value.detail == "RuntimeError('Unable to find libseccomp')"


def test_a_name_this_libseccomp_does_not_know_is_left_out_and_said(monkeypatch, caplog):
    """An older libseccomp than Debian 12's lacks the newest names: the filter is built
    without them (the rest still refused), and the log says which."""
    normal = seccomp.program()
    monkeypatch.setattr(seccomp, "REFUSED", (*seccomp.REFUSED, "no_such_call"))
    seccomp.program.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="workbench.sandbox"):
            assert seccomp.program() == normal
    finally:
        seccomp.program.cache_clear()
    assert caplog.messages == ["sandbox seccomp: libseccomp does not know no_such_call"]
