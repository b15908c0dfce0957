"""A persistent, bounded package cache per tenant, bound into its sandboxed servers.

Why: a sandbox's HOME is a new tmpfs at every spawn, so without this `npx -y` and `uvx`
download and unpack their package at every start (5-9 s for a published server, past an
HTTP client's default timeout). Each tenant gets one cache, owned by its uid and shared by
its servers only; its `npm/` is bound writable at `~/.npm` (npm's cache, npx's installs)
and its `cache/` at `~/.cache` (uv, pip, anything following XDG).

The bound: by default a loop-mounted ext4 image per tenant, made and mounted on first use
and then reused by every gateway process of the host (a hard bound: a write past it fails
with ENOSPC; the oldest entries are pruned before a spawn once it is nearly full). Where
loop mounts are not possible (not root, no mkfs.ext4, no loop devices), a plain directory
pruned to the budget, oldest first, before each spawn (a soft bound: a running server can
write past it until the next spawn), with a warning naming why.

Layout under the cache directory (root's alone, 0700): `images/<uid>.img`,
`volumes/<uid>/` (an image's mount point), `dirs/<uid>/` (soft bound), `locks/<uid>`. A
tenant's root (a volume or a dir) is root's; only its `npm/` and `cache/` are the tenant's
and bound into its sandboxes, so a server never names a path outside them that root then
follows. Pruning moves whole entries (`npm/_npx/<hash>`, `cache/uv/<bucket>`, ...) out
through directory descriptors opened without following links, then deletes them with
`rm -rf` where no server can reach.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from kernel.named_paths import is_protected
from mcp_gateway.downstream.sandbox.cache_entries import (
    BOUND,
    TRASH,
    CacheUnavailable,
    prune,
    run,
)
from mcp_gateway.options import GatewayOptions, current_options

logger = logging.getLogger("workbench.sandbox")

MIB = 1024 * 1024
# ext4 without reserved blocks, one inode per 8 KiB (package trees are many small files);
# the image is sparse and zero, so its tables and journal need no writing.
MKFS_OPTIONS = ("-q", "-F", "-m", "0", "-i", "8192", "-E", "lazy_itable_init=1,lazy_journal_init=1")
MOUNT_OPTIONS = "loop,nosuid,nodev,noatime,noinit_itable"
# A hard-bound volume is pruned once this full, down to PRUNE_TO of its capacity.
PRUNE_AT = 0.9
PRUNE_TO = 0.75


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """The gateway-wide cache settings (WORKBENCH_SANDBOX_CACHE_*): where, and how large
    each tenant's cache may grow (MiB; 0: no cache)."""

    directory: str = GatewayOptions.sandbox_cache_dir  # the defaults' home: the options
    size_mb: int = GatewayOptions.sandbox_cache_mb
    mkfs: str = "mkfs.ext4"

    @classmethod
    def of(cls, options: GatewayOptions) -> CachePolicy:
        return cls(directory=options.sandbox_cache_dir, size_mb=options.sandbox_cache_mb)

    @classmethod
    def from_settings(cls) -> CachePolicy:
        """From the WORKBENCH_SANDBOX_CACHE_* settings, as they are now."""
        return cls.of(current_options())


# The cache of sandboxes started outside the gateway (bench), whose policy names none;
# the gateway's sandbox policy always carries its own (`SandboxPolicy.cache`).
_policy: CachePolicy | None = None
# (cache directory, uid) -> why its image could not be had: this process's soft bounds.
_soft: dict[tuple[str, int], str] = {}


def configure(policy: CachePolicy | None) -> None:
    """Set this process's cache policy (None: the settings', read at the next spawn)."""
    global _policy
    _policy = policy


def active() -> CachePolicy:
    """The configured policy, else the settings' (read once); none outside a configured
    Django project (a benchmark launching a sandbox directly): no cache."""
    global _policy
    if _policy is None:
        try:
            _policy = CachePolicy.from_settings()
        except ImproperlyConfigured:
            _policy = CachePolicy(size_mb=0)
    return _policy


def protect_directory(directory: str, protected: Sequence[str]) -> list[str]:
    """`protected` with the cache directory added (no server may mount all tenants'
    caches); refused when it lies in, or holds, one of the gateway's own paths."""
    if not os.path.isabs(directory):
        raise ImproperlyConfigured(
            f"WORKBENCH_SANDBOX_CACHE_DIR must be an absolute path, not {directory!r}"
        )
    resolved = os.path.normpath(directory)
    if is_protected(resolved, protected):
        raise ImproperlyConfigured(
            f"WORKBENCH_SANDBOX_CACHE_DIR ({resolved}) must not be in or hold one of the "
            "gateway's protected paths (WORKBENCH_SANDBOX_PROTECTED_PATHS)"
        )
    return sorted({*protected, resolved})


# The sandbox's command line


def outer_binds(cache: str | None, home: str) -> list[str]:
    """The outer (root) sandbox's binds of the tenant's cache into HOME."""
    if cache is None:
        return []
    return [part for name, at in BOUND for part in ("--bind", f"{cache}/{name}", f"{home}/{at}")]


def inner_binds(cache: str | None, home: str) -> list[str]:
    """The same again in the inner sandbox, whose private HOME hides the outer's."""
    if cache is None:
        return []
    return [part for _, at in BOUND for part in ("--bind", f"{home}/{at}", f"{home}/{at}")]


# Making it ready


def prepare(uid: int, policy: CachePolicy | None = None) -> str | None:
    """The host directory of `uid`'s cache, made, mounted and pruned, to bind into its
    sandbox; None when the cache is off or cannot be had (a warning says why: the
    server then starts without one, as before)."""
    policy = policy or active()
    if policy.size_mb <= 0:
        return None
    try:
        if (policy.directory, uid) not in _soft:
            try:
                return _hard(policy, uid)
            except CacheUnavailable as exc:
                _soft[(policy.directory, uid)] = str(exc)
                logger.warning(
                    "sandbox cache of uid %d: no loop-mounted image (%s); using a directory "
                    "pruned to %d MiB before each spawn instead (a soft bound: a running "
                    "server can write past it)",
                    uid,
                    exc,
                    policy.size_mb,
                )
        return _soft_bound(policy, uid)
    except (OSError, CacheUnavailable, subprocess.SubprocessError) as exc:
        logger.warning("sandbox cache of uid %d is off for this spawn: %s", uid, exc)
        return None


def _hard(policy: CachePolicy, uid: int) -> str:
    """The tenant's volume, mounted (by this process or another) and pruned when nearly
    full, or CacheUnavailable saying why loop mounts are not possible here."""
    root = _base(policy.directory)
    volume = root / "volumes" / str(uid)
    if not os.path.ismount(volume):
        with _locked(root, uid):
            if not os.path.ismount(volume):  # another gateway process may have mounted it
                _mount(policy, root, uid, volume)
    with _locked(root, uid):
        _layout(volume, uid)
        fs = os.statvfs(volume)  # what is left for writing (ext4 keeps some back)
        if fs.f_bavail < fs.f_blocks * (1 - PRUNE_AT):
            try:
                prune(str(volume), int(fs.f_blocks * fs.f_frsize * PRUNE_TO))
            except (OSError, CacheUnavailable) as exc:  # still bounded: use it as it is
                logger.warning("sandbox cache of uid %d could not be pruned: %s", uid, exc)
    return str(volume)


def _soft_bound(policy: CachePolicy, uid: int) -> str:
    """The tenant's plain directory, pruned to the budget now (nothing bounds it later)."""
    root = _base(policy.directory)
    tenant = root / "dirs" / str(uid)
    with _locked(root, uid):
        tenant.mkdir(mode=0o755, exist_ok=True)
        _layout(tenant, uid)
        prune(str(tenant), policy.size_mb * MIB)
    return str(tenant)


def _base(directory: str) -> Path:
    """The cache directory and its parts, root's alone."""
    root = Path(directory)
    if not root.is_dir():
        root.mkdir(mode=0o700, parents=True)
    for part in ("images", "volumes", "dirs", "locks"):
        (root / part).mkdir(mode=0o700, exist_ok=True)
    return root


@contextlib.contextmanager
def _locked(root: Path, uid: int) -> Iterator[None]:
    """One gateway process at a time makes, mounts or prunes a tenant's cache."""
    fd = os.open(root / "locks" / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _mount(policy: CachePolicy, root: Path, uid: int, volume: Path) -> None:
    """Mount the tenant's image at `volume`, made first when missing or of another size."""
    if os.geteuid() != 0:
        raise CacheUnavailable("the gateway does not run as root")
    mkfs = shutil.which(policy.mkfs)
    if mkfs is None:
        raise CacheUnavailable(f"{policy.mkfs} is not installed")
    image = root / "images" / f"{uid}.img"
    size = policy.size_mb * MIB
    made = False
    if not image.exists() or image.stat().st_size != size:  # new, or the bound changed
        _make_image(mkfs, image, size)
        made = True
    volume.mkdir(mode=0o755, exist_ok=True)
    mount = ["mount", "-t", "ext4", "-o", MOUNT_OPTIONS, str(image), str(volume)]
    try:
        run(mount)
    except CacheUnavailable:
        if made:
            raise
        _make_image(mkfs, image, size)  # unreadable: it is only a cache, start again
        run(mount)


def _make_image(mkfs: str, image: Path, size: int) -> None:
    """A sparse file of `size` bytes holding an empty ext4 file system."""
    partial = image.with_suffix(".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)
    run([mkfs, *MKFS_OPTIONS, str(partial)])
    os.replace(partial, image)


def _layout(tenant: Path, uid: int) -> None:
    """The tenant's `npm/` and `cache/`: directories of its uid alone, mode 0700. The
    root holding them is root's, so no server can put a link in their place. Beside them
    the trash, root's, made while there is room (a full file system has none for it)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(tenant / TRASH, 0o700)
    for name, _ in BOUND:
        with contextlib.suppress(FileExistsError):
            os.mkdir(tenant / name, 0o700)
        fd = os.open(tenant / name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            found = os.fstat(fd)
            if (found.st_uid, found.st_gid) != (uid, uid):
                os.fchown(fd, uid, uid)
            if stat.S_IMODE(found.st_mode) != 0o700:
                os.fchmod(fd, 0o700)
        finally:
            os.close(fd)


def release(directory: str) -> None:
    """Unmount every tenant volume under `directory` and delete it all (the test suite's
    clean-up; an operator's, with no gateway running)."""
    volumes = Path(directory) / "volumes"
    if volumes.is_dir():
        for volume in volumes.iterdir():
            if os.path.ismount(volume):
                subprocess.run(["umount", "--lazy", str(volume)], check=False)
    shutil.rmtree(directory, ignore_errors=True)
    for key in [key for key in _soft if key[0] == directory]:
        del _soft[key]
