"""What a tenant's package cache holds, entry by entry: its usage as `du` counts it, and
pruning to a budget, oldest entries first, moved out through directory descriptors opened
without following links and deleted where no server can reach. And the one way the cache
runs a host tool."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

# What a tenant's cache holds, and where each part shows in a sandbox's HOME.
BOUND = (("npm", ".npm"), ("cache", ".cache"))
# Pruning removes whole entries this deep below `npm/` or `cache/` (`_npx/<hash>`).
UNIT_DEPTH = 2
TRASH = ".trash"
COMMAND_SECONDS = 60


class CacheUnavailable(Exception):
    """Why a tenant's cache (or its hard bound) cannot be had here."""


def run(argv: list[str]) -> None:
    """Run a host tool; CacheUnavailable with the last line it said when it fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CacheUnavailable(f"{Path(argv[0]).name}: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise CacheUnavailable(f"{Path(argv[0]).name} failed: {said}")


@dataclass(frozen=True, slots=True)
class Entry:
    """One unit of pruning: an entry UNIT_DEPTH deep in `npm/` or `cache/`, or a
    shallower leaf there."""

    modified: float  # its newest modification, itself or anything in it
    size: int  # bytes on disk
    path: bytes  # relative to the tenant's root


def usage(tenant: str) -> tuple[int, list[Entry]]:
    """The bytes a tenant's cache takes on disk and its entries, as `du` (which never
    follows a link, nor leaves the file system) sees them."""
    argv = ["du", "-x", "-a", "-0", "-B1", "-d", str(UNIT_DEPTH), "--time"]
    argv += ["--time-style=+%s", "--", *(f"{tenant}/{name}" for name, _ in BOUND)]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=COMMAND_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CacheUnavailable(f"du: {exc}") from None
    if done.returncode != 0 and not done.stdout:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise CacheUnavailable(f"du failed: {said[-1] if said else done.returncode}")
    prefix = os.fsencode(tenant) + b"/"
    found: list[tuple[float, int, bytes]] = []
    for record in done.stdout.split(b"\0"):
        size, _, rest = record.partition(b"\t")
        modified, _, path = rest.partition(b"\t")
        if path.startswith(prefix):
            found.append((float(modified), int(size), path[len(prefix) :]))
    total = sum(size for _, size, path in found if b"/" not in path)
    parents = {os.path.dirname(path) for _, _, path in found}
    entries = [
        Entry(modified, size, path)
        for modified, size, path in found
        if path.count(b"/") == UNIT_DEPTH or (b"/" in path and path not in parents)
    ]
    return total, entries


def prune(tenant: str, budget: int) -> int:
    """Remove whole entries of a tenant's cache, oldest first, until it takes at most
    `budget` bytes; the bytes it took before."""
    total, entries = usage(tenant)
    if total <= budget:
        return total
    left = total
    trash = _trash(tenant)
    try:
        oldest_first = sorted(entries, key=lambda entry: (entry.modified, entry.path))
        for index, entry in enumerate(oldest_first):
            if left <= budget:
                break
            if _move_out(tenant, entry.path, trash, str(index)):
                left -= entry.size
    finally:
        os.close(trash)
        _empty_trash(tenant)
    return total


def _trash(tenant: str) -> int:
    """The (emptied) directory of root's beside what is bound, on the same file system,
    that no server sees: where pruned entries are moved before they are deleted."""
    _empty_trash(tenant)
    return os.open(f"{tenant}/{TRASH}", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def _empty_trash(tenant: str) -> None:
    """`rm -rf` (which never follows a link) of what is in the trash."""
    names = os.listdir(f"{tenant}/{TRASH}")
    if names:
        run(["rm", "-rf", "--one-file-system", "--", *(f"{tenant}/{TRASH}/{n}" for n in names)])


def _move_out(tenant: str, path: bytes, trash: int, as_name: str) -> bool:
    """Move one entry to the trash, every directory on its way opened without following
    a link (a server may have put one there since `du` looked)."""
    *parents, name = path.split(b"/")
    fd = os.open(tenant, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parents:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.rename(name, os.fsencode(as_name), src_dir_fd=fd, dst_dir_fd=trash)
        return True
    except OSError:
        return False  # gone, or no longer a directory on its way: the server's own doing
    finally:
        os.close(fd)


# Clean-up
