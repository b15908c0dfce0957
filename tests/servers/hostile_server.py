"""A stdio MCP server that tries to escape its sandbox, and says what it found.

    python tests/servers/hostile_server.py

Tools: `escape` (every attempt below, as JSON: {attempt: {"escaped": bool, "detail": str}}),
`burn` (spins the CPU until a limit stops it), `whoami` (uid, pid, HOME), and for the
network and memory bounds (issue 20):

- `connect` (`targets`: [[host, port], ...], `timeout` s): {"host:port": outcome}, the
  outcome `connected` or the errno's name (`ECONNREFUSED`, `EHOSTUNREACH`, `ENETUNREACH`,
  `timeout`), so that a refusal is told from a silence;
- `fill` (`mib`): writes up to that many MiB to /tmp and to HOME, keeping the files, and
  says where each stopped and why: {"/tmp": {"written_mib": float, "stopped": str}, ...};
- `map` (`mib`): maps that many MiB of shared anonymous memory (`MAP_SHARED`, which
  RLIMIT_DATA does not count) and touches every page; past the memory limit it dies;
- `swap` (`path`, `target`): replaces `path` (a directory in a writable mount) with a
  symlink to `target` (a path it cannot see: the gateway's own, another tenant's), for the
  next server whose mount names `path` to follow (refused: mcp_gateway.downstream.sandbox.paths).

`escape` arguments: `victim_pid` (tenant B's server, as the host numbers it), `secret`
(a value from tenant B's env), `files` (the gateway's files to read: env file, database,
...), `project_dir` and `project_entries` (names in it that must stay invisible),
`gateway_port` (to reach over the network), `memory_mb` (its memory limit), `forks`.
"""

from __future__ import annotations

import errno
import json
import mmap
import os
import signal
import socket
import sys
import traceback
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server


def attempt(escaped: bool, detail: str) -> dict[str, Any]:
    return {"escaped": escaped, "detail": detail[:300]}


def read_environs(victim_pid: int, secret: str) -> dict[str, Any]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if secret.encode() in handle.read():
                        found.append(entry)
            except OSError:
                pass
    try:
        with open(f"/proc/{victim_pid}/environ", "rb") as handle:
            data = handle.read()
        direct = attempt(secret.encode() in data, f"read {len(data)} bytes of {victim_pid}")
    except OSError as exc:
        direct = attempt(False, f"/proc/{victim_pid}/environ: {exc}")
    if found:
        return attempt(True, f"secret in /proc/{found}/environ")
    return direct


def list_and_signal(victim_pid: int) -> dict[str, Any]:
    pids = sorted(int(entry) for entry in os.listdir("/proc") if entry.isdigit())
    mine = {os.getpid(), os.getppid()}
    try:
        os.kill(victim_pid, signal.SIGTERM)
        signalled = f"SIGTERM sent to {victim_pid}"
        killed = True
    except OSError as exc:
        signalled = f"kill({victim_pid}): {exc}"
        killed = False
    # Outside its sandbox it would see the gateway and other tenants: hundreds of pids.
    others = [pid for pid in pids if pid not in mine]
    return attempt(
        killed or len(pids) > 10, f"sees pids {pids[:20]} (others {others}); {signalled}"
    )


def read_files(files: list[str]) -> dict[str, Any]:
    details = []
    escaped = False
    for path in files:
        try:
            with open(path, "rb") as handle:
                handle.read(64)
            escaped = True
            details.append(f"{path}: READ")
        except OSError as exc:
            details.append(f"{path}: {exc.strerror}")
    return attempt(escaped, "; ".join(details))


def list_project(project_dir: str, entries: list[str]) -> dict[str, Any]:
    try:
        seen = os.listdir(project_dir)
    except OSError as exc:
        return attempt(False, f"{project_dir}: {exc.strerror}")
    leaked = sorted(set(seen) & set(entries))
    return attempt(bool(leaked), f"sees {sorted(seen)}; of the project's own: {leaked}")


def write_outside(targets: list[str]) -> dict[str, Any]:
    details = []
    escaped = False
    for directory in targets:
        path = os.path.join(directory, "hostile-was-here")
        try:
            with open(path, "w") as handle:
                handle.write("x")
            escaped = True
            details.append(f"{path}: WRITTEN")
        except OSError as exc:
            details.append(f"{path}: {exc.strerror}")
    return attempt(escaped, "; ".join(details))


def fork_many(count: int) -> dict[str, Any]:
    """Start `count` children that wait on a pipe; all leave when it closes."""
    read_end, write_end = os.pipe()
    started = 0
    error = ""
    try:
        for _ in range(count):
            pid = os.fork()
            if pid == 0:
                os.close(write_end)
                os.read(read_end, 1)
                os._exit(0)
            started += 1
    except OSError as exc:
        error = exc.strerror or str(exc)
    finally:
        os.close(write_end)
        os.close(read_end)
        for _ in range(started):
            try:
                os.wait()
            except ChildProcessError:
                break
    return attempt(started >= count, f"started {started} of {count}; then: {error}")


def allocate(memory_mb: int) -> dict[str, Any]:
    size = (memory_mb + 64) * 1024 * 1024
    try:
        block = bytearray(size)
        block[-1] = 1
    except MemoryError:
        return attempt(False, f"MemoryError allocating {size} bytes")
    return attempt(True, f"allocated {size} bytes")


def hog() -> None:
    """Allocate until the memory limit refuses, then die as an unhandled MemoryError
    does (its traceback on stderr, exit status 1): the SDK would otherwise catch it."""
    blocks = []
    try:
        while True:
            blocks.append(bytearray(64 * 1024 * 1024))
    except MemoryError:
        blocks.clear()
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


def open_socket(port: int) -> dict[str, Any]:
    details = []
    escaped = False
    # Loopback only: a test never sends traffic to an outside address.
    for host, target_port in (("127.0.0.1", port), ("127.0.0.2", port)):
        try:
            with socket.create_connection((host, target_port), timeout=3):
                escaped = True
                details.append(f"{host}:{target_port}: CONNECTED")
        except OSError as exc:
            details.append(f"{host}:{target_port}: {exc.strerror or exc}")
    return attempt(escaped, "; ".join(details))


MIB = 1024 * 1024


def connect(targets: list[list[Any]], timeout: float) -> dict[str, str]:
    """Each target's outcome: `connected`, or why not (the errno's name)."""
    outcomes = {}
    for host, port in targets:
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                outcome = "connected"
        except TimeoutError:
            outcome = "timeout"
        except OSError as exc:
            outcome = errno.errorcode.get(exc.errno or 0, str(exc))
        outcomes[f"{host}:{port}"] = outcome
    return outcomes


def fill(mib: int) -> dict[str, dict[str, Any]]:
    """Write `mib` MiB to a file in /tmp and one in HOME (kept: the pages stay in use)."""
    block = b"x" * MIB
    report = {}
    for name, directory in (("/tmp", "/tmp"), ("HOME", os.environ.get("HOME", "/nonexistent"))):
        written = 0
        stopped = "wrote it all"
        try:
            with open(os.path.join(directory, "fill"), "wb", buffering=0) as handle:
                while written < mib * MIB:
                    written += handle.write(block)
        except OSError as exc:
            stopped = f"{errno.errorcode.get(exc.errno or 0, '?')}: {exc.strerror}"
        report[name] = {"written_mib": round(written / MIB, 2), "stopped": stopped}
    return report


def map_shared(mib: int) -> dict[str, Any]:
    """Touch `mib` MiB of MAP_SHARED anonymous memory (shmem: tmpfs pages, no rlimit)."""
    mapped = mmap.mmap(-1, mib * MIB, flags=mmap.MAP_SHARED)
    for offset in range(0, mib * MIB, mmap.PAGESIZE):
        mapped[offset] = 1
    return {"touched_mib": mib}


def swap(path: str, target: str) -> dict[str, Any]:
    """Move the directory `path` aside and leave a symlink to `target` in its place."""
    os.rename(path, f"{path}.moved")
    os.symlink(target, path)
    return {"swapped": path, "to": os.readlink(path)}


def escape(arguments: dict[str, Any]) -> dict[str, Any]:
    victim = int(arguments["victim_pid"])
    home = os.environ.get("HOME", "/nonexistent")
    writable_here = write_outside([home, "/tmp"])  # the control: its own places
    return {
        "read_environ": read_environs(victim, arguments["secret"]),
        "list_and_signal": list_and_signal(victim),
        "read_gateway_files": read_files(arguments["files"]),
        "list_project": list_project(arguments["project_dir"], arguments["project_entries"]),
        "write_outside_home": write_outside(arguments["write_targets"]),
        "fork": fork_many(int(arguments.get("forks", 10_000))),
        "allocate": allocate(int(arguments["memory_mb"])),
        "network": open_socket(int(arguments["gateway_port"])),
        "control_own_home_and_tmp": writable_here,
    }


def build() -> Server:
    async def list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        schema: dict[str, Any] = {"type": "object"}
        return types.ListToolsResult(
            tools=[
                types.Tool(name="escape", description="Try every escape", input_schema=schema),
                types.Tool(name="burn", description="Spin the CPU", input_schema=schema),
                types.Tool(name="hog", description="Allocate until it dies", input_schema=schema),
                types.Tool(name="whoami", description="uid, pid, HOME", input_schema=schema),
                types.Tool(name="connect", description="Connect to targets", input_schema=schema),
                types.Tool(name="fill", description="Fill /tmp and HOME", input_schema=schema),
                types.Tool(name="map", description="Touch shared memory", input_schema=schema),
                types.Tool(name="swap", description="A symlink for a dir", input_schema=schema),
            ]
        )

    async def call_tool(ctx: ServerRequestContext, params: Any) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "escape":
            report: Any = await anyio.to_thread.run_sync(escape, arguments)
        elif params.name == "burn":
            while True:  # until SIGXCPU
                pass
        elif params.name == "hog":
            hog()
        elif params.name == "connect":
            targets, timeout = arguments["targets"], float(arguments.get("timeout", 3))
            report = await anyio.to_thread.run_sync(connect, targets, timeout)
        elif params.name == "fill":
            report = await anyio.to_thread.run_sync(fill, int(arguments["mib"]))
        elif params.name == "map":
            report = map_shared(int(arguments["mib"]))
        elif params.name == "swap":
            report = swap(arguments["path"], arguments["target"])
        else:
            report = {"uid": os.getuid(), "pid": os.getpid(), "home": os.environ.get("HOME")}
        text = json.dumps(report)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
