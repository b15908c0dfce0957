"""A sandboxed server's memory, bounded as a whole by a memory cgroup of its own.

`RLIMIT_DATA` (prlimit) bounds a process's private heap only: `MAP_SHARED` memory and
tmpfs pages (the sandbox's /tmp and HOME) count toward no rlimit. A memory cgroup
charges all of them, for every process of the server together; past the limit the
kernel's OOM killer stops the server, and the cgroup records it, so the calls it leaves
behind get the memory-limit reason. cgroup v2 (`memory.max`) where the unified
hierarchy has the memory controller, else v1 (`memory.limit_in_bytes`, the swap limit
too where swap is accounted). Where neither can be written (a container without
cgroup delegation), the gateway says so once and the rlimit alone applies.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
from pathlib import Path

logger = logging.getLogger("workbench.sandbox")

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "workbench"  # the parent of every server's group
_counter = itertools.count(1)
_warned = False
_swept = False  # groups of gateways gone removed, once per process


def _hierarchy() -> tuple[Path, int] | None:
    """The memory controller's mount and its cgroup version, if this host has one."""
    controllers = CGROUP_ROOT / "cgroup.controllers"
    if controllers.is_file() and "memory" in controllers.read_text().split():
        return CGROUP_ROOT, 2
    if (CGROUP_ROOT / "memory" / "memory.limit_in_bytes").is_file():
        return CGROUP_ROOT / "memory", 1
    return None


class MemoryGroup:
    """One server's cgroup: made before the server runs, removed after it exits."""

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self.version = version

    @classmethod
    def create(cls, limit_bytes: int) -> MemoryGroup | None:
        """A new group limited to `limit_bytes`, or None where cgroups cannot be used."""
        global _warned, _swept
        found = _hierarchy()
        try:
            if found is None:
                raise OSError("no memory cgroup hierarchy is mounted")
            root, version = found
            parent = root / GROUP
            if not parent.is_dir():
                parent.mkdir(exist_ok=True)
                if version == 2:
                    (root / "cgroup.subtree_control").write_text("+memory")
                    (parent / "cgroup.subtree_control").write_text("+memory")
            if not _swept:
                _swept = True
                remove_stale()
            path = _new_path(parent)
            group = cls(path, version)
            group._limit(limit_bytes)
            return group
        except OSError as exc:
            if not _warned:
                _warned = True
                logger.warning(
                    "memory cgroups cannot be used (%s): a stdio server's memory is bounded "
                    "by RLIMIT_DATA only, which shared memory and tmpfs pages escape",
                    exc,
                )
            return None

    def _limit(self, limit_bytes: int) -> None:
        if self.version == 2:
            (self.path / "memory.max").write_text(str(limit_bytes))
            swap = self.path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
            return
        (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
        swap = self.path / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(str(limit_bytes))

    def add(self, pid: int) -> None:
        """Move a process (its threads too) into the group; its children follow it."""
        (self.path / "cgroup.procs").write_text(str(pid))

    def pids(self) -> list[int]:
        """The processes in the group: a sandbox's linger a moment after bwrap's exit
        (its PID namespace is torn down after), and a group is removable only empty."""
        try:
            return [int(pid) for pid in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def oom_killed(self) -> bool:
        """The kernel stopped a process of this group for its limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            lines = (self.path / name).read_text().splitlines()
        except OSError:
            return False
        counts = dict(line.split(maxsplit=1) for line in lines if " " in line)
        if "oom_kill" in counts:
            return int(counts["oom_kill"]) > 0
        # Older v1 kernels: the limit was hit and an allocation failed.
        try:
            return int((self.path / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError):
            return False

    def remove(self) -> None:
        """Remove the group once it is empty (best effort: a leftover is only a name)."""
        try:
            self.path.rmdir()
        except OSError as exc:
            logger.debug("memory cgroup %s not removed: %s", self.path, exc)


def _new_path(parent: Path) -> Path:
    """A new group named after this process. A name taken is not this process's (its
    counter only goes up) but a gateway's before it of the same pid, which left it behind:
    a container's gateway is pid 1 at every start. Skipped, never removed: with several
    containers under one parent the same pid may be another's, alive."""
    while True:
        path = parent / f"{os.getpid()}-{next(_counter)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path


def remove_stale() -> None:
    """Remove groups left by gateway processes that no longer run (empty ones only)."""
    found = _hierarchy()
    if found is None:
        return
    parent = found[0] / GROUP
    if not parent.is_dir():
        return
    for path in parent.iterdir():
        owner = path.name.split("-", 1)[0]
        if path.is_dir() and owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):
                path.rmdir()
