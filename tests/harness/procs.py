"""The process table, read from /proc: who runs, under whom, with what memory and CPU."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

STOP_TIMEOUT = 30.0


def read_proc(path: str) -> str:
    """A /proc file as text (NULs as spaces); empty when the process is gone."""
    try:
        with open(path, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: [state, ppid, ...]; empty when gone."""
    stat = read_proc(f"/proc/{pid}/stat")
    return stat.rsplit(")", 1)[1].split() if ")" in stat else []


def cmdline(pid: int) -> str:
    return read_proc(f"/proc/{pid}/cmdline")


def live_pids() -> list[int]:
    """Every process that is not a zombie."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields and fields[0] != "Z":
                pids.append(int(entry))
    return pids


def processes_with(marker: str) -> list[int]:
    """PIDs of live processes whose command line contains marker (zombies excluded), the
    sandbox's own bubblewrap processes around a server excepted."""
    return [
        pid
        for pid in live_pids()
        if marker in (line := cmdline(pid)) and os.path.basename(line.split(" ", 1)[0]) != "bwrap"
    ]


def descendants(pid: int) -> list[int]:
    """Live (non-zombie) processes under pid, at any depth."""
    children: dict[int, list[int]] = {}
    for child in live_pids():
        fields = stat_fields(child)
        if fields:
            children.setdefault(int(fields[1]), []).append(child)
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def descendants_running(pid: int, marker: str) -> list[int]:
    """Processes under pid whose command line holds marker (e.g. downstream servers)."""
    return [child for child in descendants(pid) if marker in cmdline(child)]


def rss_kib(pid: int) -> int:
    """Resident set size of one process, from /proc/<pid>/status (VmRSS, KiB)."""
    for line in read_proc(f"/proc/{pid}/status").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU time of these processes (utime + stime), in seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = stat_fields(pid)
        if len(fields) > 12:
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def environ_of(pid: int) -> dict[str, str]:
    """The environment a process started with (/proc/<pid>/environ)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            raw = handle.read()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {name.decode(errors="replace"): value.decode(errors="replace") for name, value in pairs}


def kill_tree(process: subprocess.Popen[Any]) -> None:
    """SIGKILL a process we started and every process under it. The tree is read first:
    once the parent is gone, its children (uvicorn's workers, say) belong to init."""
    if process.poll() is not None:
        return
    left = {pid: cmdline(pid) for pid in descendants(process.pid)}
    process.kill()
    process.wait(timeout=STOP_TIMEOUT)
    for pid, command in left.items():
        if cmdline(pid) == command:  # still the process we saw, not a reused pid
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
