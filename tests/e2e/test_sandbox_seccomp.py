"""The sandbox's seccomp filter, end to end through /mcp (issue 31, finding 7): a hostile
stdio server reaches for the kernel's attack surface (nested user namespaces, keyrings,
ptrace, BPF, mounts, io_uring, ...) and every attempt is refused, while what every server
does (threads, child processes, commands) still works."""

from __future__ import annotations

import json
import sys

import pytest

from tests.harness.paths import KERNEL_SERVER
from tests.harness.results import payload, text_of, use
from toolboxes.models import Server

# Between the gateway and its downstream servers (processes, networks): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

NESTED = "unshare: unshare failed: Operation not permitted"
REFUSED = {
    "unshare(CLONE_NEWUSER)": "EPERM",
    "unshare -U -r": NESTED,
    "unshare -U -r -m mount": NESTED,
    "clone(CLONE_NEWUSER)": "EPERM",
    "clone3": "ENOSYS",  # so that the C library falls back to clone, whose flags are seen
    "setns": "EPERM",
    "add_key": "EPERM",
    "keyctl": "EPERM",
    "request_key": "EPERM",
    "ptrace(PTRACE_TRACEME)": "EPERM",
    "process_vm_readv": "EPERM",
    "bpf(BPF_PROG_LOAD)": "EPERM",
    "mount": "EPERM",
    "umount2": "EPERM",
    "pivot_root": "EPERM",
    "fsopen": "EPERM",
    "open_tree": "EPERM",
    "io_uring_setup": "EPERM",
    "perf_event_open": "EPERM",
    "userfaultfd": "EPERM",
    "kexec_load": "EPERM",
    "init_module": "EPERM",
}


@pytest.fixture
def kernel(make_setup):
    setup = make_setup("kernel")
    server = Server(
        toolbox=setup.toolbox("kernel"),
        name="kernel",
        command=sys.executable,
        args=[KERNEL_SERVER],
        network=False,
    )
    server.full_clean()
    server.save()
    return setup


async def test_a_server_reaching_for_the_kernel_is_refused_every_attempt(live_gateway, kernel):
    async with live_gateway.session(kernel.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "kernel"}))
        result = await session.call_tool("use_tool", use("kernel", "kernel", "attempt"))
    assert not result.is_error, text_of(result)
    found = json.loads(text_of(result))
    assert found["controls"] == {"a thread": "ok", "a child process": "ok", "a command": "ok"}
    assert found["attempts"] == REFUSED
