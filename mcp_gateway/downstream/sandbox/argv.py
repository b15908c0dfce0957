"""How a stdio server is started: from its configuration to an argv and an environment.

With `WORKBENCH_SANDBOX=bwrap` (the default) every stdio server runs in a bubblewrap
sandbox of its own, built in two layers because the gateway usually runs as root:

1. an outer `bwrap`, started as root: new PID, IPC, UTS and network namespaces (a server
   whose network is on is given a filtered one before it runs: `start`,
   `network`); a fresh root holding only the host's system directories,
   the command's own files and the server's mounts, all read-only unless a mount says
   otherwise; `/proc` of the sandbox's own processes; a minimal `/dev`;
2. `prlimit` sets the server's limits, `setpriv` drops to the tenant's own unprivileged
   uid (`uid_base + tenant id`), so that the process-count limit binds (it does not bind
   root) and no two tenants share a uid;
3. an inner `bwrap`, started as that uid: a new user namespace, a private writable HOME
   and `/tmp` (tmpfs, owned by the server, each bounded by WORKBENCH_SANDBOX_TMP_MB),
   the tenant's package cache at `~/.npm` and `~/.cache` (`cache`), the working
   directory, the seccomp filter (`seccomp`: installed last, so that it binds the server
   and everything it starts, not bubblewrap's own setup), then the command.

The server's memory as a whole (heap, shared memory, its tmpfs pages) is bounded by a
cgroup of its own (`memory`), which `start` sets up before the server runs.

Nothing here starts anything: `launch` is a pure function, unit-tested, but for making the
tenant's package cache ready (`cache.prepare`). The files a command is shown are
`host_files`; the gateway-wide rules, `policy`; whether bubblewrap works, `probe`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kernel.classified import ClassifiedFailure
from kernel.named_paths import SYSTEM_DIRS
from kernel.tenant_paths import inside
from mcp_gateway.downstream.sandbox import cache as sandbox_cache
from mcp_gateway.downstream.sandbox import network as sandbox_network
from mcp_gateway.downstream.sandbox import seccomp as sandbox_seccomp
from mcp_gateway.downstream.sandbox.host_files import check_mount, command_files, parents
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.snapshots.sandbox import Limits, SandboxSpec

HOME = "/home/server"
SUPPORT_DIR = "/run/workbench"  # inside the outer sandbox: files the gateway provides
# git refuses a repository owned by another uid (all host files are, inside the sandbox).
GITCONFIG = "[safe]\n\tdirectory = *\n"
SECCOMP_FILE = f"{SUPPORT_DIR}/seccomp.bpf"
SECCOMP_FD = 3  # the filter, opened by the handover shell for the inner bwrap


@dataclass(frozen=True, slots=True)
class Spawn:
    """What to spawn for one stdio server."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None  # for the spawn itself (None inside a sandbox: it sets its own)


# The command line


def _support_file(name: str = "gitconfig", content: str | bytes = GITCONFIG) -> str:
    """A host file holding `content`, readable by the outer (root) sandbox only; replaced
    whole when it differs (another process's spawn may be reading it)."""
    directory = Path(tempfile.gettempdir()) / f"workbench-sandbox-{os.getuid()}"
    directory.mkdir(mode=0o700, exist_ok=True)
    stat = directory.lstat()
    if directory.is_symlink() or stat.st_uid != os.getuid():
        raise ClassifiedFailure(
            "the sandbox could not start: its support directory is not the gateway's own",
            f"{directory} is a symlink or owned by uid {stat.st_uid}",
        )
    path = directory / name
    data = content.encode() if isinstance(content, str) else content
    if not path.exists() or path.read_bytes() != data:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=f".{name}.", delete=False) as new:
            new.write(data)
        os.chmod(new.name, 0o644)
        os.replace(new.name, path)
    return str(path)


def _prlimit(limits: Limits) -> list[str]:
    argv = ["prlimit"]
    if limits.memory_mb:
        size = limits.memory_mb * 1024 * 1024
        argv.append(f"--data={size}:{size}")
    if limits.processes:
        argv.append(f"--nproc={limits.processes}:{limits.processes}")
    if limits.cpu_seconds:
        # The soft limit sends SIGXCPU (reported as this limit); the hard one SIGKILL.
        argv.append(f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}")
    if limits.open_files:
        argv.append(f"--nofile={limits.open_files}:{limits.open_files}")
    return argv


def _dir_chain(path: str, made: set[str]) -> list[str]:
    """`--dir` for each missing parent, mode 0755 (bwrap would make them 0700, root's)."""
    argv: list[str] = []
    for parent in parents(path):
        if parent not in made:
            made.add(parent)
            argv += ["--perms", "0755", "--dir", parent]
    return argv


def uid_for(spec: SandboxSpec, policy: SandboxPolicy) -> int:
    return policy.uid_base + spec.owner


def sandbox_argv(
    executable: str,
    args: Sequence[str],
    cwd: str | None,
    spec: SandboxSpec,
    policy: SandboxPolicy,
    *,
    binds: Sequence[str] | None = None,
    gitconfig: str | None = None,
    resolv_conf: str | None = None,
    unset: Sequence[str] = (),
    cache: str | None = None,
    seccomp: str | None = None,
) -> list[str]:
    """The whole command line: outer bwrap, limits, uid, inner bwrap, the command
    (`seccomp`: the host file holding the filter's BPF program, `seccomp.program`)."""
    if binds is None:
        binds = command_files(
            executable,
            args,
            cwd,
            policy.protected,
            roots=spec.roots,
            mounts=[mount.path for mount in spec.mounts],
        )
    outer = [
        policy.bwrap,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        # Always a network namespace of its own: a server whose network is on is given
        # a filtered one before it runs (`start`, `network`).
        "--unshare-net",
    ]
    for directory in SYSTEM_DIRS:
        if os.path.islink(directory):
            outer += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            outer += ["--ro-bind", directory, directory]
    outer += ["--proc", "/proc", "--dev", "/dev"]
    made: set[str] = set()
    outer += ["--perms", "0755", "--dir", "/tmp", "--perms", "0755", "--dir", HOME]
    made.update({"/tmp", "/home", HOME})
    outer += sandbox_cache.outer_binds(cache, HOME)  # the tenant's package cache
    for path in binds:
        outer += [*_dir_chain(path, made), "--ro-bind", path, path]
    for mount in spec.mounts:
        check_mount(mount.path, policy.protected)
        flag = "--bind" if mount.writable else "--ro-bind"
        outer += [*_dir_chain(mount.path, made), flag, mount.path, mount.path]
    # Protected paths that a bound directory would show are hidden again.
    for path in policy.protected:
        if any(inside(path, bound) and path != bound for bound in [*SYSTEM_DIRS, *binds]):
            if os.path.isdir(path):
                outer += ["--tmpfs", path]
            elif os.path.exists(path):
                outer += ["--ro-bind", "/dev/null", path]
    if gitconfig or seccomp:
        outer += ["--perms", "0755", "--dir", SUPPORT_DIR]
    if gitconfig:
        outer += ["--ro-bind", gitconfig, f"{SUPPORT_DIR}/gitconfig"]
    if seccomp:
        outer += ["--ro-bind", seccomp, SECCOMP_FILE]
    if resolv_conf and spec.network:
        target = sandbox_network.resolv_conf_target()
        outer += [*_dir_chain(target, made), "--ro-bind", resolv_conf, target]
    uid = uid_for(spec, policy)
    # stdin/stdout/stderr are the gateway's pipes (root's, mode 0600): handed to the
    # server's uid, or opening /dev/stdin in the server fails.
    # The filter is opened here, as root (bwrap reads it from the fd, then closes it).
    opened = f" {SECCOMP_FD}<{SECCOMP_FILE}" if seccomp else ""
    handover = [
        "/bin/sh",
        "-c",
        f'chown -f {uid}:{uid} /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2; exec "$@"{opened}',
        "sh",
    ]
    drop = [
        *handover,
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
    ]
    inner = [
        "bwrap",
        "--unshare-user",
        "--die-with-parent",
        "--dev-bind",  # a plain bind would be nodev: /dev/null must stay openable
        "/",
        "/",
        # Bounded: tmpfs pages are memory that no rlimit counts (the cgroup does).
        "--size",
        str(policy.tmp_mb * 1024 * 1024),
        "--tmpfs",
        "/tmp",
        "--perms",
        "0700",
        "--size",
        str(policy.tmp_mb * 1024 * 1024),
        "--tmpfs",
        HOME,
    ]
    inner += sandbox_cache.inner_binds(cache, HOME)
    # The private /tmp hides what the outer layer bound under it: bind those again.
    for path, writable in [*((bind, False) for bind in binds), *spec.mounts_bound()]:
        if inside(path, "/tmp") or inside(path, HOME):
            inner += ["--bind" if writable else "--ro-bind", path, path]
    if gitconfig:
        inner += ["--ro-bind", f"{SUPPORT_DIR}/gitconfig", f"{HOME}/.gitconfig"]
    inner += ["--chdir", cwd or HOME]
    if seccomp:
        inner += ["--seccomp", str(SECCOMP_FD)]
    command = [executable, *args]
    if unset:
        command = ["/usr/bin/env", *(part for name in unset for part in ("-u", name)), *command]
    return [*outer, "--", *_prlimit(spec.limits), "--", *drop, "--", *inner, "--", *command]


def launch(
    executable: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    spec: SandboxSpec,
    policy: SandboxPolicy,
    *,
    unset: Sequence[str] = (),
) -> Spawn:
    """What to spawn for this server. `env` is already the server's env plus the base;
    `unset` names variables the spawn adds that the server must not see."""
    if not policy.enabled:
        return Spawn([executable, *args], dict(env), cwd)
    limited = replace(spec, limits=spec.limits.over(policy.limits))
    sandboxed_env = dict(env) | {"HOME": HOME}
    argv = sandbox_argv(
        executable,
        args,
        cwd,
        limited,
        policy,
        gitconfig=_support_file(),
        resolv_conf=_support_file("resolv.conf", sandbox_network.RESOLV_CONF),
        unset=unset,
        cache=sandbox_cache.prepare(uid_for(limited, policy), policy.cache),
        seccomp=seccomp_file(policy),
    )
    return Spawn(argv, sandboxed_env, None)


def seccomp_file(policy: SandboxPolicy) -> str | None:
    """The host file holding the seccomp filter (None: the policy runs without one)."""
    return _support_file("seccomp.bpf", sandbox_seccomp.program()) if policy.seccomp else None


# Is it there?
