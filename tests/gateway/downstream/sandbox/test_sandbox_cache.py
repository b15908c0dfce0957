"""Each tenant's persistent package cache: bound at its servers' ~/.npm and ~/.cache, its
own uid's, never another tenant's, and bounded (a loop-mounted image where it can be, a
directory pruned oldest first where not). Some tests start a real sandbox (as root, with
bubblewrap), to see the bind and the bound from inside, as the tenant's uid."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from mcp_gateway.downstream.sandbox import cache as sandbox_cache
from mcp_gateway.downstream.sandbox import cache_entries
from mcp_gateway.downstream.sandbox.argv import HOME, launch, sandbox_argv
from mcp_gateway.downstream.sandbox.cache import CachePolicy, prepare, protect_directory
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.snapshots.sandbox import SandboxSpec

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None,
    reason="needs root (loop mounts, the tenants' uids) and bubblewrap",
)

POLICY = SandboxPolicy()
KIB = 1024


@pytest.fixture
def cache_dir(tmp_path: Path) -> Iterator[str]:
    directory = str(tmp_path / "cache")
    yield directory
    sandbox_cache.release(directory)


def uid(owner: int) -> int:
    return POLICY.uid_base + owner


def run_in_sandbox(owner: int, script: str, cache: str | None) -> subprocess.CompletedProcess:
    """`sh -c script` in tenant `owner`'s sandbox, with `cache` bound."""
    spec = SandboxSpec(owner=owner, network=False)
    argv = sandbox_argv("/bin/sh", ["-c", script], None, spec, POLICY, binds=[], cache=cache)
    env = {"PATH": "/usr/bin:/bin", "HOME": HOME}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30)


def entry(path: Path, size: int, modified: float) -> None:
    """A cache entry (a directory holding one file) last modified at `modified`."""
    path.mkdir(parents=True)
    (path / "data").write_bytes(b"x" * size)
    for item in (path / "data", path):
        os.utime(item, (modified, modified))


def mounts_at(path: str) -> int:
    with open("/proc/self/mountinfo") as mountinfo:
        return sum(1 for line in mountinfo if line.split()[4] == path)


def test_the_tenants_cache_is_bound_at_its_npm_and_cache_and_is_its_uids_alone(cache_dir):
    cache = prepare(uid(7), CachePolicy(cache_dir, 16))
    assert cache == f"{cache_dir}/volumes/{uid(7)}"
    assert (os.stat(cache).st_uid, stat.S_IMODE(os.stat(cache).st_mode)) == (0, 0o755)
    for name in ("npm", "cache"):
        info = os.stat(f"{cache}/{name}")
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (uid(7), uid(7), 0o700)
    argv = sandbox_argv("/bin/true", [], None, SandboxSpec(owner=7), POLICY, binds=[], cache=cache)
    outer, inner = argv[: argv.index("--")], argv[argv.index("bwrap", 1) :]
    assert outer[outer.index(f"{cache}/npm") - 1 :][:3] == [
        "--bind",
        f"{cache}/npm",
        f"{HOME}/.npm",
    ]
    assert outer[outer.index(f"{cache}/cache") - 1 :][:3] == [
        "--bind",
        f"{cache}/cache",
        f"{HOME}/.cache",
    ]
    # Again inside, after the private HOME that would hide them.
    after_home = inner[inner.index(HOME) + 1 :]
    assert after_home[:6] == [
        *("--bind", f"{HOME}/.npm", f"{HOME}/.npm"),
        *("--bind", f"{HOME}/.cache", f"{HOME}/.cache"),
    ]
    seen = run_in_sandbox(7, 'id -u; stat -c "%u %a" "$HOME/.npm" "$HOME/.cache"', cache)
    assert seen.stdout.split("\n") == [str(uid(7)), f"{uid(7)} 700", f"{uid(7)} 700", ""]


def test_launch_binds_the_cache_of_the_servers_tenant(cache_dir):
    sandbox_cache.configure(CachePolicy(cache_dir, 16))
    try:
        argv = launch("/bin/true", [], {}, None, SandboxSpec(owner=8), POLICY).argv
    finally:
        sandbox_cache.configure(None)
    volume = f"{cache_dir}/volumes/{uid(8)}"
    assert argv[argv.index(f"{volume}/npm") + 1] == f"{HOME}/.npm"
    assert argv[argv.index(f"{volume}/cache") + 1] == f"{HOME}/.cache"


def test_a_write_past_the_hard_bound_fails_with_enospc_inside_the_sandbox(cache_dir):
    policy = CachePolicy(cache_dir, 8)
    cache = prepare(uid(9), policy)
    written = run_in_sandbox(9, 'head -c 16777216 /dev/zero > "$HOME/.npm/big"', cache)
    assert written.stderr == "head: error writing 'standard output': No space left on device\n"
    assert os.path.getsize(f"{cache}/npm/big") < 8 * 1024 * KIB
    with pytest.raises(OSError) as raised:  # not even root writes past it
        Path(f"{cache}/cache/more").write_bytes(b"x" * 8 * 1024 * KIB)
    assert raised.value.errno == errno.ENOSPC
    # Full: the next spawn finds it pruned, the oldest entries first.
    Path(f"{cache}/cache/more").unlink()
    os.utime(f"{cache}/npm/big", (1000, 1000))
    prepare(uid(9), policy)
    assert not os.path.exists(f"{cache}/npm/big")
    assert sorted(os.listdir(cache)) == [".trash", "cache", "lost+found", "npm"]
    assert os.listdir(f"{cache}/.trash") == []  # emptied


def test_a_mounted_cache_is_reused_by_the_next_spawn_and_process(cache_dir):
    policy = CachePolicy(cache_dir, 16)
    cache = prepare(uid(10), policy)
    Path(f"{cache}/npm/kept").write_text("from the first spawn")
    sandbox_cache._soft.clear()  # what another gateway process knows: nothing
    assert prepare(uid(10), policy) == cache
    assert mounts_at(cache) == 1
    assert run_in_sandbox(10, 'cat "$HOME/.npm/kept"', cache).stdout == "from the first spawn"


def test_two_tenants_never_share_one(cache_dir):
    policy = CachePolicy(cache_dir, 16)
    mine, theirs = prepare(uid(11), policy), prepare(uid(12), policy)
    assert mine != theirs
    assert os.stat(mine).st_dev != os.stat(theirs).st_dev  # file systems of their own
    assert os.stat(f"{theirs}/npm").st_uid == uid(12)
    assert run_in_sandbox(11, 'echo secret > "$HOME/.npm/mine"', mine).returncode == 0
    peek = run_in_sandbox(12, 'ls -A "$HOME/.npm" "$HOME/.cache"', theirs)
    assert peek.stdout == f"{HOME}/.cache:\n\n{HOME}/.npm:\n"
    # Nor can a tenant's uid reach another's cache on the host.
    stolen = run_in_sandbox(12, f"cat {mine}/npm/mine", theirs)
    assert stolen.stderr == f"cat: {mine}/npm/mine: No such file or directory\n"


def test_without_loop_mounts_a_soft_bound_prunes_oldest_first_and_says_why(cache_dir, caplog):
    policy = CachePolicy(cache_dir, 1, mkfs="/nonexistent/mkfs.ext4")
    with caplog.at_level(logging.WARNING, logger="workbench.sandbox"):
        cache = prepare(uid(13), policy)
    assert cache == f"{cache_dir}/dirs/{uid(13)}"
    assert caplog.messages == [
        f"sandbox cache of uid {uid(13)}: no loop-mounted image (/nonexistent/mkfs.ext4 is "
        "not installed); using a directory pruned to 1 MiB before each spawn instead (a soft "
        "bound: a running server can write past it)"
    ]
    assert stat.S_IMODE(os.stat(f"{cache}/npm").st_mode) == 0o700
    assert os.stat(f"{cache}/npm").st_uid == uid(13)
    entry(Path(f"{cache}/npm/_npx/oldest"), 400 * KIB, 1000)
    entry(Path(f"{cache}/cache/uv/middle"), 400 * KIB, 2000)
    entry(Path(f"{cache}/npm/_npx/newest"), 400 * KIB, 3000)
    caplog.clear()
    assert prepare(uid(13), policy) == cache
    assert caplog.messages == []  # said once
    assert not os.path.exists(f"{cache}/npm/_npx/oldest")
    assert os.path.exists(f"{cache}/cache/uv/middle") and os.path.exists(f"{cache}/npm/_npx/newest")
    total, _ = cache_entries.usage(cache)
    assert total <= 1024 * KIB
    assert sorted(os.listdir(cache)) == [".trash", "cache", "npm"]
    assert os.listdir(f"{cache}/.trash") == []


def test_pruning_never_follows_a_link_out_of_the_cache(cache_dir, tmp_path):
    policy = CachePolicy(cache_dir, 1, mkfs="/nonexistent/mkfs.ext4")
    cache = prepare(uid(14), policy)
    outside = tmp_path / "outside"
    entry(outside / "victim", 10, 500)
    os.symlink(outside, f"{cache}/npm/_cacache")  # an old link, to be pruned first
    os.utime(f"{cache}/npm/_cacache", (500, 500), follow_symlinks=False)
    entry(Path(f"{cache}/npm/_npx/big"), 1200 * KIB, 3000)
    prepare(uid(14), policy)
    assert not os.path.lexists(f"{cache}/npm/_cacache")  # the link went, not its target
    assert (outside / "victim" / "data").exists()
    # A link put in the way after `du` looked is not followed either.
    trash = cache_entries._trash(cache)
    try:
        os.symlink(outside, f"{cache}/npm/swapped")
        assert cache_entries._move_out(cache, b"npm/swapped/victim", trash, "0") is False
    finally:
        os.close(trash)
    assert (outside / "victim" / "data").exists()


def test_a_cache_of_0_mb_is_none(cache_dir):
    assert prepare(uid(15), CachePolicy(cache_dir, 0)) is None
    assert not os.path.exists(cache_dir)
    argv = sandbox_argv("/bin/true", [], None, SandboxSpec(owner=15), POLICY, binds=[])
    assert f"{HOME}/.npm" not in argv


def test_an_unusable_cache_directory_starts_the_server_without_one(tmp_path, caplog):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with caplog.at_level(logging.WARNING, logger="workbench.sandbox"):
        assert prepare(uid(16), CachePolicy(str(blocked / "cache"), 16)) is None
    assert caplog.messages == [
        f"sandbox cache of uid {uid(16)} is off for this spawn: "
        f"[Errno 20] Not a directory: '{blocked}/cache'"
    ]


def test_the_cache_directory_is_protected_and_never_in_a_protected_path():
    assert protect_directory("/var/lib/wb/cache/", ["/srv/project"]) == [
        "/srv/project",
        "/var/lib/wb/cache",
    ]
    with pytest.raises(ImproperlyConfigured) as inside:
        protect_directory("/srv/project/var/cache", ["/srv/project"])
    assert str(inside.value) == (
        "WORKBENCH_SANDBOX_CACHE_DIR (/srv/project/var/cache) must not be in or hold one of "
        "the gateway's protected paths (WORKBENCH_SANDBOX_PROTECTED_PATHS)"
    )
    with pytest.raises(ImproperlyConfigured) as relative:
        protect_directory("var/cache", [])
    assert str(relative.value) == (
        "WORKBENCH_SANDBOX_CACHE_DIR must be an absolute path, not 'var/cache'"
    )


def test_the_settings_protect_the_cache_directory(settings):
    assert settings.WORKBENCH_SANDBOX_CACHE_DIR in settings.WORKBENCH_SANDBOX_PROTECTED_PATHS
    assert CachePolicy().directory == "/var/lib/workbench/sandbox-cache"
    assert CachePolicy().size_mb == 1024
