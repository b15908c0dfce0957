"""A stdio MCP server that reaches for the kernel's attack surface from its sandbox, and
says what each attempt returned (issue 31, finding 7).

    python tests/servers/kernel_server.py

Tool `attempt`: every attempt below, each in a child process of its own (so that one that
succeeds changes nothing of the server's), as JSON {attempt: outcome}, the outcome `ok`
or the errno's name (`EPERM`, `ENOSYS`, ...); for a command, `ok` or its last line of
stderr. Inside the sandbox every one is expected refused; `controls` are expected `ok`
(a child process, a thread, a command: what every server does and the filter allows).

- `unshare_user`: unshare(CLONE_NEWUSER), `unshare -U -r` (root in a new user namespace)
  and `unshare -U -r -m mount -t tmpfs` (then a mount of its own), clone(CLONE_NEWUSER),
  clone3, setns into its own user namespace;
- `keyring`: add_key, keyctl, request_key;
- `ptrace`: ptrace(PTRACE_TRACEME), process_vm_readv;
- `bpf`: bpf(BPF_PROG_LOAD) of a two-instruction socket filter;
- `mount`: mount a tmpfs, umount2, pivot_root, fsopen, open_tree;
- `io_uring_setup`, `perf_event_open`, `userfaultfd`, `kexec_load`, `init_module`.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

# x86_64 system call numbers (the sandbox's tests run there).
NR = {
    "clone": 56,
    "ptrace": 101,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "init_module": 175,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "kexec_load": 246,
    "perf_event_open": 298,
    "setns": 308,
    "process_vm_readv": 310,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "open_tree": 428,
    "fsopen": 430,
    "clone3": 435,
}
CLONE_NEWUSER = 0x10000000
KEY_SPEC_PROCESS_KEYRING = -2
KEY_SPEC_SESSION_KEYRING = -3

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def syscall(name: str, *args: int | bytes | None) -> str:
    """`ok`, or the errno's name, of one raw system call."""
    values = [ctypes.c_char_p(a) if isinstance(a, bytes | None) else ctypes.c_long(a) for a in args]
    result = libc.syscall(ctypes.c_long(NR[name]), *values)
    if result >= 0:
        return "ok"
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def clone_new_user() -> str:
    """clone(CLONE_NEWUSER | SIGCHLD) as fork does it: the child leaves at once."""
    pid = libc.syscall(ctypes.c_long(NR["clone"]), ctypes.c_long(CLONE_NEWUSER | signal.SIGCHLD), 0)
    if pid == 0:
        os._exit(0)
    if pid < 0:
        return errno.errorcode.get(ctypes.get_errno(), "?")
    os.waitpid(pid, 0)
    return "ok"


def clone3() -> str:
    args = (ctypes.c_uint64 * 11)(0, 0, 0, 0, signal.SIGCHLD, 0, 0, 0, 0, 0, 0)
    pid = libc.syscall(ctypes.c_long(NR["clone3"]), ctypes.byref(args), ctypes.sizeof(args))
    if pid == 0:
        os._exit(0)
    if pid < 0:
        return errno.errorcode.get(ctypes.get_errno(), "?")
    os.waitpid(pid, 0)
    return "ok"


def setns_own_user_namespace() -> str:
    fd = os.open("/proc/self/ns/user", os.O_RDONLY)
    try:
        return syscall("setns", fd, CLONE_NEWUSER)
    finally:
        os.close(fd)


def ptrace_traceme() -> str:
    return syscall("ptrace", 0, 0, 0, 0)  # PTRACE_TRACEME


def process_vm_readv() -> str:
    """Read a byte of its own memory by the call a debugger uses on another's."""
    buffer = ctypes.create_string_buffer(b"x")
    target = ctypes.create_string_buffer(1)

    class IoVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    local = IoVec(ctypes.cast(target, ctypes.c_void_p), 1)
    remote = IoVec(ctypes.cast(buffer, ctypes.c_void_p), 1)
    result = libc.syscall(
        ctypes.c_long(NR["process_vm_readv"]),
        ctypes.c_long(os.getpid()),
        ctypes.byref(local),
        ctypes.c_long(1),
        ctypes.byref(remote),
        ctypes.c_long(1),
        ctypes.c_long(0),
    )
    return "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")


def bpf_prog_load() -> str:
    """BPF_PROG_LOAD of a socket filter that returns 0 (mov r0, 0; exit)."""
    insns = (ctypes.c_uint64 * 2)(0x00000000000000B7, 0x0000000000000095)
    license = ctypes.create_string_buffer(b"GPL")
    attr = (ctypes.c_uint8 * 128)()
    fields = (ctypes.c_uint32 * 2)(1, 2)  # prog_type SOCKET_FILTER, insn_cnt
    ctypes.memmove(attr, fields, 8)
    ctypes.memmove(ctypes.byref(attr, 8), ctypes.byref(ctypes.c_uint64(ctypes.addressof(insns))), 8)
    ctypes.memmove(
        ctypes.byref(attr, 16), ctypes.byref(ctypes.c_uint64(ctypes.addressof(license))), 8
    )
    result = libc.syscall(ctypes.c_long(NR["bpf"]), 5, ctypes.byref(attr), ctypes.sizeof(attr))
    if result >= 0:
        os.close(result)
        return "ok"
    return errno.errorcode.get(ctypes.get_errno(), "?")


def io_uring_setup() -> str:
    params = (ctypes.c_uint8 * 120)()
    result = libc.syscall(ctypes.c_long(NR["io_uring_setup"]), 1, ctypes.byref(params))
    if result >= 0:
        os.close(result)
        return "ok"
    return errno.errorcode.get(ctypes.get_errno(), "?")


def perf_event_open() -> str:
    """A software counter of its own task (PERF_COUNT_SW_TASK_CLOCK), kernel excluded."""
    attr = (ctypes.c_uint8 * 128)()
    ctypes.memmove(attr, (ctypes.c_uint32 * 2)(1, 128), 8)  # type SOFTWARE, size
    ctypes.memmove(ctypes.byref(attr, 8), ctypes.byref(ctypes.c_uint64(1)), 8)  # TASK_CLOCK
    ctypes.memmove(ctypes.byref(attr, 40), ctypes.byref(ctypes.c_uint64(0b1100000)), 8)
    result = libc.syscall(ctypes.c_long(NR["perf_event_open"]), ctypes.byref(attr), 0, -1, -1, 0)
    if result >= 0:
        os.close(result)
        return "ok"
    return errno.errorcode.get(ctypes.get_errno(), "?")


def userfaultfd() -> str:
    result = libc.syscall(ctypes.c_long(NR["userfaultfd"]), os.O_CLOEXEC | 1)  # user-mode only
    if result >= 0:
        os.close(result)
        return "ok"
    return errno.errorcode.get(ctypes.get_errno(), "?")


def command(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    if done.returncode == 0:
        return "ok"
    said = done.stderr.strip().splitlines()
    return said[-1] if said else f"exit status {done.returncode}"


def a_thread() -> str:
    ran: list[bool] = []
    thread = threading.Thread(target=lambda: ran.append(True))
    thread.start()
    thread.join(10)
    return "ok" if ran else "the thread did not run"


ATTEMPTS: dict[str, Callable[[], str]] = {
    "unshare(CLONE_NEWUSER)": lambda: syscall("unshare", CLONE_NEWUSER),
    "unshare -U -r": lambda: command("unshare", "-U", "-r", "true"),
    "unshare -U -r -m mount": lambda: command(
        "unshare", "-U", "-r", "-m", "mount", "-t", "tmpfs", "none", "/tmp"
    ),
    "clone(CLONE_NEWUSER)": clone_new_user,
    "clone3": clone3,
    "setns": setns_own_user_namespace,
    "add_key": lambda: syscall("add_key", b"user", b"wb-probe", b"x", 1, KEY_SPEC_PROCESS_KEYRING),
    "keyctl": lambda: syscall("keyctl", 0, KEY_SPEC_SESSION_KEYRING, 0),  # GET_KEYRING_ID
    "request_key": lambda: syscall("request_key", b"user", b"wb-none", None, 0),
    "ptrace(PTRACE_TRACEME)": ptrace_traceme,
    "process_vm_readv": process_vm_readv,
    "bpf(BPF_PROG_LOAD)": bpf_prog_load,
    "mount": lambda: syscall("mount", b"none", b"/tmp", b"tmpfs", 0, None),
    "umount2": lambda: syscall("umount2", b"/tmp", 0),
    "pivot_root": lambda: syscall("pivot_root", b"/tmp", b"/tmp"),
    "fsopen": lambda: syscall("fsopen", b"tmpfs", 0),
    "open_tree": lambda: syscall("open_tree", -100, b"/tmp", 1),  # OPEN_TREE_CLONE
    "io_uring_setup": io_uring_setup,
    "perf_event_open": perf_event_open,
    "userfaultfd": userfaultfd,
    "kexec_load": lambda: syscall("kexec_load", 0, 0, None, 0),
    "init_module": lambda: syscall("init_module", None, 0, b""),
}
CONTROLS: dict[str, Callable[[], str]] = {
    "a thread": a_thread,
    "a child process": lambda: command(sys.executable, "-c", "pass"),
    "a command": lambda: command("sh", "-c", "true | cat"),
}


def in_child(attempt: Callable[[], str]) -> str:
    """Run one attempt in a forked child (what it changes dies with it)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            outcome = attempt()
        except Exception as exc:  # the report says what broke
            outcome = f"raised {exc!r}"
        os.write(write_end, outcome.encode()[:500])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        said = reader.read().decode()
    os.waitpid(pid, 0)
    return said


def report() -> dict[str, Any]:
    if os.getuid() == 0:  # a mount or pivot_root would be real: only in a sandbox
        raise SystemExit("kernel_server.py --report runs only as an unprivileged uid")
    return {
        "attempts": {name: in_child(attempt) for name, attempt in ATTEMPTS.items()},
        "controls": {name: in_child(control) for name, control in CONTROLS.items()},
    }


def main() -> None:
    import anyio
    import mcp_types as types
    from mcp.server import Server, ServerRequestContext
    from mcp.server.stdio import stdio_server

    async def list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        schema: dict[str, Any] = {"type": "object"}
        tool = types.Tool(name="attempt", description="Reach for the kernel", input_schema=schema)
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: ServerRequestContext, params: Any) -> types.CallToolResult:
        # A process of its own: forking the server's threaded process is not safe.
        done = await anyio.run_process([sys.executable, __file__, "--report"], check=False)
        text = done.stdout.decode() or done.stderr.decode()
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def serve() -> None:
        server = Server("kernel", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    if sys.argv[1:] == ["--report"]:
        print(json.dumps(report()))
    else:
        main()
